# SPDX-License-Identifier: Apache-2.0
"""``python -m compat vendor DEST``: copy the runtime into a host project; ``--check DEST`` reports drift.

The copy holds the runtime only (every ``*.py`` module outside ``tooling/`` and ``__main__.py``, and the data
files the runtime reads), LICENSE, NOTICE and py.typed, plus ``VENDORED.json``
(source version, the registry's newest release, sha256 of every copied file). It never writes outside DEST: every file is written
as a new file and renamed into place (a hard link in DEST to a file elsewhere is replaced, not written through),
and a symlink on the way is refused. VENDORED.json is only a hint, never trusted: ``--check`` compares DEST with
this package's own files, and a module dropped upstream is deleted only when its content is still exactly what
VENDORED.json says vendoring wrote (anything else is kept and reported).
"""
from __future__ import annotations

import json
import os
import re
import stat
from pathlib import Path

from ..errors import CompatError, cli_command, escape_controls, one_line
from .archive import MAX_MEMBER_BYTES, MAX_MEMBERS, MIB, read_file
from .extract import sha256

MANIFEST = "VENDORED.json"
REGISTRY = "data/registry.json"
LEFT_OUT = ("tooling", "__main__.py")  # never run in a training job
LEGAL = ("LICENSE", "NOTICE", "py.typed")  # travel with every copy (py.typed: the host's type checker reads it)
# data/ holds only what the runtime reads (the tooling's own data lies in tooling/data/, left out with tooling/):
# tests/unit/test_layout.py keeps the two apart.
MAX_MANIFEST_BYTES = 1 * MIB


class VendorError(CompatError):
    """DEST cannot be vendored into or checked."""


class UnsafeDestinationError(VendorError):
    """DEST is a symlink, goes through one, or contains '..'."""


def _show(path) -> str:
    return escape_controls(str(path))


def source_files(source=None) -> dict[str, bytes]:
    """{relative posix path: content} of everything the package needs at runtime (not the tooling)."""
    from importlib import resources  # ~10 ms of imports, not paid by `vendor --help`

    root = source if source is not None else resources.files(__package__.rpartition(".")[0])
    out: dict[str, bytes] = {}

    def walk(folder, prefix: str) -> None:
        for f in folder.iterdir():
            if not prefix and f.name in LEFT_OUT:
                continue
            wanted = f.name.endswith(".json") if prefix == "data/" else f.name.endswith(".py") or (
                not prefix and f.name in LEGAL)
            if f.is_file() and wanted:
                out[prefix + f.name] = _read_source(f)
            elif f.is_dir() and f.name != "__pycache__" and (f.name == "data" or f.joinpath("__init__.py").is_file()):
                walk(f, f"{prefix}{f.name}/")

    walk(root, "")
    return dict(sorted(out.items()))


def _read_source(f) -> bytes:
    if isinstance(f, (str, os.PathLike)):
        return read_file(f, MAX_MEMBER_BYTES, "package file", error=VendorError)
    with f.open("rb") as fh:  # a Traversable inside a zip import
        data = fh.read(MAX_MEMBER_BYTES + 1)
    if len(data) > MAX_MEMBER_BYTES:
        raise VendorError(f"package file {f.name!r} is over the {MAX_MEMBER_BYTES}-byte cap")
    return data


def _registry_newest(raw: bytes) -> str | None:
    from ..registry import Registry

    try:
        return Registry(json.loads(raw)).newest()
    except (ValueError, KeyError, TypeError):
        return None


def safe_dest(dest) -> Path:
    """DEST as given, refused if it contains '..', is a symlink or passes through one."""
    path = Path(dest)
    if ".." in path.parts:
        raise UnsafeDestinationError(f"refusing DEST {str(dest)!r}: it contains '..'; give a direct path")
    for i in range(1, len(path.parts) + 1):
        probe = Path(*path.parts[:i])
        st = _lstat(probe, "DEST")
        if st is not None and stat.S_ISLNK(st.st_mode):
            raise UnsafeDestinationError(f"refusing DEST {str(dest)!r}: {str(probe)!r} is a symlink")
    return path


def _lstat(path: Path, what: str) -> os.stat_result | None:
    """lstat, None when absent; a VendorError for a path that cannot be looked at (too long, NUL, no access)."""
    try:
        return os.lstat(path)
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as exc:
        raise VendorError(f"cannot access {what} {str(path)!r}: {getattr(exc, 'strerror', None) or exc}") from None


def _plain(rel: str) -> bool:
    """A manifest entry we may touch: ``name``, ``data/name`` or ``subpackage/name`` (the manifest itself may be
    tampered with)."""
    return re.fullmatch(r"([A-Za-z0-9_]+/)*[A-Za-z0-9_][A-Za-z0-9_.-]*", rel) is not None


def _check_inside(dest: Path, rel: str) -> None:
    """A pre-existing symlink inside DEST (e.g. DEST/data) would redirect a write outside it."""
    probe = dest
    for part in rel.split("/"):
        probe = probe / part
        if probe.is_symlink():
            raise UnsafeDestinationError(f"refusing to write through symlink {str(probe)!r} inside DEST")


def _read_manifest(dest: Path) -> dict | None:
    """VENDORED.json (read bounded, shape-checked), or None when DEST holds none."""
    path = dest / MANIFEST
    if _lstat(path, MANIFEST) is None:
        return None
    raw = read_file(path, MAX_MANIFEST_BYTES, MANIFEST, follow_symlinks=False, error=VendorError)
    try:
        manifest = json.loads(raw.decode("utf-8"))
    except (ValueError, RecursionError) as exc:
        raise VendorError(f"{_show(path)}: unreadable {MANIFEST}: {one_line(exc, 200)}") from None
    files = manifest.get("files") if isinstance(manifest, dict) else None
    if not isinstance(files, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in files.items()):
        raise VendorError(f"{_show(path)}: not an mcore-compat {MANIFEST} (no 'files' table of path: sha256)")
    return manifest


def _content(path: Path) -> bytes | None:
    """A regular file's bytes (not following a symlink); None for anything else or a file over the cap."""
    try:
        st = os.lstat(path)
    except (OSError, ValueError):
        return None
    if not stat.S_ISREG(st.st_mode) or st.st_size > MAX_MEMBER_BYTES:
        return None
    try:
        return read_file(path, MAX_MEMBER_BYTES, "vendored file", follow_symlinks=False, error=VendorError)
    except VendorError:
        return None


def _non_empty(folder: Path) -> bool:
    with os.scandir(folder) as entries:
        return any(entries)


def vendor(dest, *, force: bool = False, source=None) -> dict:
    """Copy the package into DEST and write VENDORED.json; returns the manifest (plus ``kept``: files dropped
    upstream that were not deleted because they are not what vendoring wrote)."""
    from .. import __version__
    from .fsutil import WriteError, atomic_write_bytes, atomic_write_text

    dest = safe_dest(dest)
    if not os.path.isdir(dest.parent):
        raise VendorError(f"{_show(dest.parent)} does not exist; create it first (with an __init__.py, so that "
                          f"{_show(dest.name)} is importable as a subpackage)")
    st = _lstat(dest, "DEST")
    if st is not None and not stat.S_ISDIR(st.st_mode):
        raise VendorError(f"{_show(dest)} exists and is not a directory")
    try:
        old = _read_manifest(dest) if st is not None else None
    except VendorError:
        if not force:
            raise
        old = None
    if st is not None and old is None and _non_empty(dest) and not force:
        raise VendorError(f"{_show(dest)} is not empty and holds no {MANIFEST}; refusing to overwrite it "
                          f"(pass --force to vendor into it anyway)")
    files = source_files(source)
    recorded = (old or {}).get("files", {})
    dropped = sorted(rel for rel in recorded if rel not in files and _plain(rel))
    for rel in [*files, MANIFEST, *dropped]:
        _check_inside(dest, rel)
    kept = []
    try:
        dest.mkdir(exist_ok=True)
        for folder in sorted({rel.rpartition("/")[0] for rel in files if "/" in rel}):
            (dest / folder).mkdir(exist_ok=True)
        for rel, data in files.items():
            atomic_write_bytes(dest / rel, data)  # a new inode: never writes through a hard link
        for rel in dropped:  # modules removed upstream since the last vendor
            found = _content(dest / rel)
            if found is not None and sha256(found) == recorded[rel]:
                (dest / rel).unlink()
            elif os.path.lexists(dest / rel):
                kept.append(rel)
    except OSError as exc:
        raise VendorError(f"cannot vendor into {_show(dest)}: {exc.strerror or exc}") from None
    except WriteError as exc:
        raise VendorError(f"cannot vendor into {_show(dest)}: {exc}") from None
    manifest = {"package": "mcore-compat", "version": __version__,
                "registry_newest": _registry_newest(files[REGISTRY]),
                "files": {rel: sha256(data) for rel, data in files.items()}}
    atomic_write_text(dest / MANIFEST, json.dumps(manifest, indent=1, allow_nan=False) + "\n")
    return {**manifest, "kept": kept}


def _present(dest: Path) -> set[str]:
    found, count = set(), 0
    for dirpath, dirnames, filenames in os.walk(dest):
        dirnames[:] = [d for d in dirnames if d != "__pycache__"]
        count += len(dirnames) + len(filenames)
        if count > MAX_MEMBERS:
            raise VendorError(f"{_show(dest)} holds over {MAX_MEMBERS} files and directories; not a vendored copy")
        rel_dir = Path(dirpath).relative_to(dest)
        found.update((rel_dir / n).as_posix() for n in filenames if not n.endswith(".pyc"))
    found.discard(MANIFEST)
    return found


def check(dest, *, source=None) -> dict:
    """Drift of a vendored copy against this package's own files (VENDORED.json only labels the differences):

    modified  differs from this package and from what VENDORED.json recorded (edited since vendoring)
    outdated  differs from this package but matches VENDORED.json (vendored from another version, or the manifest
              was rewritten to match an edit)
    missing / extra  files of this package absent from DEST / files in DEST that this package does not have
    stale_registry   data/registry.json differs from this package's (its newest release on both sides)
    """
    dest = safe_dest(dest)
    st = _lstat(dest, "DEST")
    manifest = _read_manifest(dest) if st is not None and stat.S_ISDIR(st.st_mode) else None
    if manifest is None:
        raise VendorError(f"{_show(dest)} is not a vendored copy (no {MANIFEST}); run "
                          f"`{cli_command(f'vendor {_show(dest)}')}`")
    ours, recorded, present = source_files(source), manifest["files"], _present(dest)
    modified, outdated, stale = [], [], None
    for rel in sorted(set(ours) & present):
        theirs = _content(dest / rel)
        if theirs == ours[rel]:
            continue
        matches_manifest = theirs is not None and sha256(theirs) == recorded.get(rel)
        if rel == REGISTRY and matches_manifest:
            stale = {"vendored_newest": _registry_newest(theirs), "source_newest": _registry_newest(ours[rel])}
        else:
            (outdated if matches_manifest else modified).append(rel)
    report = {"dest": str(dest), "version": manifest.get("version"),
              "registry_newest": manifest.get("registry_newest"), "modified": modified, "outdated": outdated,
              "missing": sorted(set(ours) - present), "extra": sorted(present - set(ours)),
              "stale_registry": stale}
    report["drift"] = bool(modified or outdated or report["missing"] or report["extra"] or stale)
    return report


def format_report(report: dict) -> str:
    rows = [f"{_show(report['dest'])}: mcore-compat {_show(report['version'])}, registry newest "
            f"{_show(report['registry_newest'])}"]
    for kind, why in (("modified", "edited since vendoring"),
                      ("outdated", "differs from this package; matches VENDORED.json"), ("missing", "deleted"),
                      ("extra", "not part of this package")):
        rows += [f"  {kind}: {_show(rel)} ({why})" for rel in report.get(kind, ())]
    if report["stale_registry"]:
        s = report["stale_registry"]
        rows.append(f"  stale registry: vendored newest {_show(s['vendored_newest'])}, this package's newest "
                    f"{_show(s['source_newest'])} (the registry data differ)")
    again = cli_command(f"vendor {_show(report['dest'])}")
    rows.append(f"drift: re-run `{again}` to refresh (local edits are lost)"
                if report["drift"] else "clean: every file matches this package")
    return "\n".join(rows)


def cmd_vendor(args) -> int:
    if args.check:
        report = check(args.dest)
        print(json.dumps(report, indent=1) if args.json else format_report(report))
        return 1 if report["drift"] else 0
    manifest = vendor(args.dest, force=args.force)
    kept = "".join(f"\nkept {_show(rel)}: dropped upstream, but its content is not what vendoring wrote"
                   for rel in manifest["kept"])
    print(json.dumps({"dest": args.dest, **manifest}, indent=1) if args.json else
          f"vendored mcore-compat {manifest['version']} ({len(manifest['files'])} files, registry newest "
          f"{manifest['registry_newest']}) into {_show(args.dest)}{kept}")
    return 0


def register(p) -> None:
    """The ``vendor`` command's arguments (its help line is in ``cli.COMMANDS``)."""
    p.add_argument("dest", metavar="DEST", help="target package directory, e.g. myproj/_vendor/mcore_compat")
    p.add_argument("--check", action="store_true",
                   help="compare DEST with this package's files (not VENDORED.json's hashes); exit 1 on drift")
    p.add_argument("--force", action="store_true", help="vendor into a non-empty directory without VENDORED.json")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_vendor)
