"""``python -m compat vendor DEST``: copy this package into a host project; ``--check DEST`` reports drift.

The copy holds every ``*.py`` module and ``data/*.json`` plus ``VENDORED.json`` (source version, the
registry's newest release, sha256 of every copied file). It never writes outside DEST.
"""
from __future__ import annotations

import json
import os
import re
from importlib import resources
from pathlib import Path

from .errors import CompatError
from .extract import sha256

MANIFEST = "VENDORED.json"
REGISTRY = "data/registry.json"


class VendorError(CompatError):
    """DEST cannot be vendored into or checked."""


class UnsafeDestinationError(VendorError):
    """DEST is a symlink, goes through one, or contains '..'."""


def source_files(source=None) -> dict[str, bytes]:
    """{relative posix path: content} of everything the package needs at runtime."""
    root = source if source is not None else resources.files(__name__.rpartition(".")[0])
    out: dict[str, bytes] = {}

    def walk(folder, prefix: str) -> None:
        for f in folder.iterdir():
            if f.is_file() and (f.name.endswith(".py") or (prefix == "data/" and f.name.endswith(".json"))):
                out[prefix + f.name] = f.read_bytes()
            elif f.is_dir() and f.name != "__pycache__" and (f.name == "data" or f.joinpath("__init__.py").is_file()):
                walk(f, f"{prefix}{f.name}/")

    walk(root, "")
    return dict(sorted(out.items()))


def _registry_newest(raw: bytes) -> str | None:
    from .registry import Registry

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
        if probe.is_symlink():
            raise UnsafeDestinationError(f"refusing DEST {str(dest)!r}: {str(probe)!r} is a symlink")
    return path


def _plain(rel: str) -> bool:
    """A manifest entry we may touch: ``name``, ``data/name`` or ``subpackage/name`` (the manifest itself may be
    tampered with)."""
    return re.fullmatch(r"([A-Za-z0-9_]+/)?[A-Za-z0-9_][A-Za-z0-9_.-]*", rel) is not None


def _check_inside(dest: Path, rel: str) -> None:
    """A pre-existing symlink inside DEST (e.g. DEST/data) would redirect a write outside it."""
    probe = dest
    for part in rel.split("/"):
        probe = probe / part
        if probe.is_symlink():
            raise UnsafeDestinationError(f"refusing to write through symlink {str(probe)!r} inside DEST")


def _read_manifest(dest: Path) -> dict | None:
    path = dest / MANIFEST
    if not path.is_file():
        return None
    try:
        manifest = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise VendorError(f"{path}: unreadable {MANIFEST}: {exc}") from None
    if not isinstance(manifest, dict) or not isinstance(manifest.get("files"), dict):
        raise VendorError(f"{path}: not an mcore-compat {MANIFEST} (no 'files' table)")
    return manifest


def vendor(dest, *, force: bool = False, source=None) -> dict:
    """Copy the package into DEST and write VENDORED.json; returns the manifest."""
    from . import __version__

    dest = safe_dest(dest)
    if not dest.parent.is_dir():
        raise VendorError(f"{dest.parent} does not exist; create it first (with an __init__.py, so that "
                          f"{dest.name} is importable as a subpackage)")
    if dest.exists() and not dest.is_dir():
        raise VendorError(f"{dest} exists and is not a directory")
    try:
        old = _read_manifest(dest) if dest.is_dir() else None
    except VendorError:
        if not force:
            raise
        old = None
    if dest.is_dir() and old is None and any(dest.iterdir()) and not force:
        raise VendorError(f"{dest} is not empty and holds no {MANIFEST}; refusing to overwrite it "
                          f"(pass --force to vendor into it anyway)")
    files = source_files(source)
    dropped = sorted(rel for rel in (old or {}).get("files", {}) if rel not in files and _plain(rel))
    for rel in [*files, MANIFEST, *dropped]:
        _check_inside(dest, rel)
    try:
        dest.mkdir(exist_ok=True)
        for folder in sorted({rel.rpartition("/")[0] for rel in files if "/" in rel}):
            (dest / folder).mkdir(exist_ok=True)
        for rel, data in files.items():
            (dest / rel).write_bytes(data)
        for rel in dropped:  # modules removed upstream since the last vendor
            if (dest / rel).is_file():
                (dest / rel).unlink()
    except OSError as exc:
        raise VendorError(f"cannot vendor into {dest}: {exc}") from None
    manifest = {"package": "mcore-compat", "version": __version__,
                "registry_newest": _registry_newest(files[REGISTRY]),
                "files": {rel: sha256(data) for rel, data in files.items()}}
    (dest / MANIFEST).write_text(json.dumps(manifest, indent=1) + "\n", encoding="utf-8")
    return manifest


def _present(dest: Path) -> set[str]:
    found = set()
    for dirpath, dirnames, filenames in os.walk(dest):
        dirnames[:] = [d for d in dirnames if d != "__pycache__"]
        rel_dir = Path(dirpath).relative_to(dest)
        found.update((rel_dir / n).as_posix() for n in filenames if not n.endswith(".pyc"))
    found.discard(MANIFEST)
    return found


def check(dest, *, source=None) -> dict:
    """Drift of a vendored copy: local edits, missing/extra files, a registry older than this package's."""
    dest = safe_dest(dest)
    manifest = _read_manifest(dest) if dest.is_dir() else None
    if manifest is None:
        raise VendorError(f"{dest} is not a vendored copy (no {MANIFEST}); run `python -m compat vendor {dest}`")
    recorded, present = manifest["files"], _present(dest)
    modified = sorted(rel for rel in recorded if rel in present
                      and sha256((dest / rel).read_bytes()) != recorded[rel])
    ours = source_files(source)[REGISTRY]
    theirs = recorded.get(REGISTRY)
    stale = None
    if theirs is not None and theirs != sha256(ours):
        stale = {"vendored_newest": manifest.get("registry_newest"), "source_newest": _registry_newest(ours)}
    report = {"dest": str(dest), "version": manifest.get("version"),
              "registry_newest": manifest.get("registry_newest"), "modified": modified,
              "missing": sorted(set(recorded) - present), "extra": sorted(present - set(recorded)),
              "stale_registry": stale}
    report["drift"] = bool(modified or report["missing"] or report["extra"] or stale)
    return report


def format_report(report: dict) -> str:
    rows = [f"{report['dest']}: mcore-compat {report['version']}, registry newest {report['registry_newest']}"]
    for kind, why in (("modified", "edited since vendoring"), ("missing", "deleted"),
                      ("extra", "not part of the vendored copy")):
        rows += [f"  {kind}: {rel} ({why})" for rel in report[kind]]
    if report["stale_registry"]:
        s = report["stale_registry"]
        rows.append(f"  stale registry: vendored newest {s['vendored_newest']}, this package's newest "
                    f"{s['source_newest']} (the registry data differ)")
    rows.append(f"drift: re-run `python -m compat vendor {report['dest']}` to refresh (local edits are lost)"
                if report["drift"] else "clean: matches VENDORED.json and this package's registry")
    return "\n".join(rows)


def cmd_vendor(args) -> int:
    if args.check:
        report = check(args.dest)
        print(json.dumps(report, indent=1) if args.json else format_report(report))
        return 1 if report["drift"] else 0
    manifest = vendor(args.dest, force=args.force)
    print(json.dumps({"dest": args.dest, **manifest}, indent=1) if args.json else
          f"vendored mcore-compat {manifest['version']} ({len(manifest['files'])} files, registry newest "
          f"{manifest['registry_newest']}) into {args.dest}")
    return 0


def register(sub) -> None:
    p = sub.add_parser("vendor", help="copy compat into a host project; --check reports drift (exit 1)")
    p.add_argument("dest", metavar="DEST", help="target package directory, e.g. myproj/_vendor/mcore_compat")
    p.add_argument("--check", action="store_true", help="report local edits and a stale registry; exit 1 on drift")
    p.add_argument("--force", action="store_true", help="vendor into a non-empty directory without VENDORED.json")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_vendor)
