# SPDX-License-Identifier: Apache-2.0
"""Every use of megatron in a project's Python, with the guards around it. Files are read, never imported.

A use is an import (module or name), an attribute chain off an imported name or module alias
(``mpu.get_x``, ``tp.gather``), a call of an imported callable or class (keywords, positional count,
``super().__init__`` of a megatron base, ``functools.partial``), or a ``getattr``/``hasattr`` probe. Names follow
Python's scoping: imports inside functions, parameters and local assignments that shadow an import.

This module finds and reads the project's files and runs the rounds of scans over them (``scan_project``); one
file's scan is scanner.py's (with the detectors under detectors/), and what needs every file scanned first is the
deferred phase, whole_project.py.
"""
from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path

from ....errors import CandidateError, CompatError
from ...archive import read_file
from ...pysource import SourceUnparsableError, parse_source
from . import guards as g
from .definitions import partial_signature, project_module
from .forwarding import FORWARDER_WORDS, WORDS
from .line_starts import line_start_matches
from .model import parse_signature
from .pool import map_in_workers
from .project_classes import (
    BASES,
    FILE,
    METHOD_LINES,
    base_names,
    descendants,
    megatron_subclass_names,
)
from .providers import settle
from .reexports import REEXPORT_ROUNDS, Reexports
from .scan_cache import FileScan, ScanCache, view_of
from .scanner import FileScanner
from .uses import SELF_ATTRIBUTE, SUPER_AFTER, Use
from .whole_project import resolve_whole_project

__all__ = ["MAX_FILE_BYTES", "MAX_FILES", "SELF_ATTRIBUTE", "SUPER_AFTER", "ProjectError", "ProjectScan", "Use",
           "own_packages", "parse_signature", "partial_signature", "per_scan", "project_file_bytes", "project_module",
           "scan_project", "scan_source"]

MAX_FILES = 20_000  # .py files looked at
MAX_FILE_BYTES = 2 << 20  # larger files are skipped and listed
MAX_TOTAL_BYTES = 512 << 20
SKIP_DIRS = {".git", ".hg", ".svn", "__pycache__", "node_modules", ".tox", ".nox", ".venv", "venv", ".eggs",
             "site-packages", ".mypy_cache", ".pytest_cache", "build", "dist"}


class ProjectError(CompatError):
    """The project directory cannot be read (exit 3)."""


@dataclass
class ProjectScan:
    root: str
    uses: list = field(default_factory=list)
    files: int = 0  # python files read
    megatron_files: int = 0  # files with at least one use
    skipped: list = field(default_factory=list)  # (path, why)
    own_packages: list = field(default_factory=list)  # megatron.X packages the project itself provides
    sets: set = field(default_factory=set)  # megatron names the project assigns (monkeypatches)
    classes: dict = field(default_factory=dict)  # "module.Class" -> {method: signature, BASES: ...} of its classes
    factories: dict = field(default_factory=dict)  # "module.function" -> (providers.factory_of's answer, path)
    sources: list = field(default_factory=list)  # (rel, path) of every Python file (annotated.ProjectNames)

    def method(self, origin: str, name: str) -> str | None:
        """The signature of the method ``name`` a project class defines or inherits from a project base (None
        where it comes from elsewhere or is not known)."""
        entry = self._defining(origin, name)
        return entry[name] if entry is not None else None

    def method_def(self, origin: str, name: str) -> tuple[str, int] | None:
        """(file, line) of the def of the method ``method(origin, name)`` reads (None: not known)."""
        entry = self._defining(origin, name)
        line = (entry.get(METHOD_LINES) or {}).get(name) if entry is not None else None
        return (entry[FILE], line) if line and entry.get(FILE) else None

    def _defining(self, origin: str, name: str, depth: int = 0) -> dict | None:
        entry = self.classes.get(origin)
        if entry is None or depth > 8:
            return None
        if name in entry:
            return entry
        for base in entry[BASES]:
            if base is None:
                return None  # a megatron or unknown base comes first: the method is not the project's
            found = self._defining(base, name, depth + 1)
            if found is not None:
                return found
        return None


def _scan(text: bytes | str, path: str, own: tuple, exports: dict | None, prefilter: bool = True) -> FileScanner:
    tree = parse_source(text, path)  # the per-file caps (bytes, estimated tokens) bound its memory before parsing
    source = text.encode("utf-8", "surrogatepass") if isinstance(text, str) else text
    text = text.decode("utf-8", "replace") if isinstance(text, bytes) else text
    return FileScanner(path, tree, own, versionish=bool(g.VERSIONISH.search(text)), exports=exports,
                        walrus=":=" in text, source=source if prefilter else None)


def project_file_bytes(path) -> bytes:
    """A project file's bytes under the scan's cap; b"" for one that cannot be read (the scan reported it)."""
    try:
        return read_file(Path(path), MAX_FILE_BYTES, "project file")
    except (OSError, CompatError):
        return b""


_PER_SCAN: dict = {}  # make -> (sources, made): one per project scan, reused by every release checked against it


def per_scan(sources: list, make):
    """``make(sources)``, made once for one project scan's ``sources`` (``ProjectScan.sources``) and reused while
    the releases of a window are checked against it; a new scan replaces it."""
    known = _PER_SCAN.get(make)
    if known is None or known[0] is not sources:
        known = _PER_SCAN[make] = (sources, make(sources))
    return known[1]


def scan_source(text: bytes | str, path: str = "<string>", own: tuple = (), exports: dict | None = None,
                *, prefilter: bool = True) -> tuple[list, set]:
    """Uses of megatron in one file, and the megatron names it assigns. A file over the parse caps or not valid
    Python raises ``compat.tooling.pysource``'s errors (CandidateError). ``prefilter=False``
    walks every function and every test (no look at the source's spelling first): what the prefilters must match."""
    scanner = _scan(text, path, own, exports, prefilter)
    alone = ProjectScan("", classes={f"{scanner.module}.{n}": m for n, m in scanner.classes.items()})
    factories = {f"{scanner.module}.{n}": (found, path) for n, found in scanner.factories.items()}
    return settle(scanner.uses, factories, alone.method), scanner.sets


def _python_files(root: Path):
    """(relative posix path, absolute path) of every .py file, not following symlinks, skipping VCS and venvs."""
    count = 0
    for dirpath, dirnames, filenames in os.walk(root):
        here = Path(dirpath)
        dirnames[:] = sorted(d for d in dirnames if d not in SKIP_DIRS and not d.startswith(".")
                             and not (here / d).is_symlink() and not (here / d / "pyvenv.cfg").exists())
        for name in sorted(filenames):
            if not name.endswith(".py"):
                continue
            path = here / name
            if path.is_symlink():
                continue
            count += 1
            if count > MAX_FILES:
                raise ProjectError(f"the project holds over {MAX_FILES} Python files; point --project at its "
                                   "package directory")
            yield path.relative_to(root).as_posix(), path


def own_packages(relpaths) -> tuple:
    """``megatron.X`` packages the project provides itself (Megatron-Bridge's ``src/megatron/bridge``), except core.

    A ``megatron`` directory counts only where it is a top-level package: its parent is not a package itself
    (``swift/megatron/`` is ``swift.megatron``)."""
    rel = set(relpaths)
    own = set()
    for path in rel:
        parts = path.split("/")
        for i, part in enumerate(parts[:-2]):
            parent_init = "/".join(parts[:i] + ["__init__.py"])
            package_init = "/".join(parts[: i + 2] + ["__init__.py"])
            if part == "megatron" and parts[i + 1] != "core" and parent_init not in rel and package_init in rel:
                own.add(f"megatron.{parts[i + 1]}")
    return tuple(sorted(own))


_FROM_IMPORT = re.compile(rb"from[ \t]+(\.*[\w.]*)[ \t]+import")  # at a line start: line_starts.py


def _module_names(rel: str) -> list[str]:
    """Every name a project file may be imported as (``a/b/c.py``: a.b.c, b.c, c: the root is not known)."""
    module, _ = project_module(rel)
    parts = module.split(".")
    return [".".join(parts[i:]) for i in range(len(parts)) if parts[i:]]


def _from_modules(data: bytes, rel: str) -> set[str]:
    """The modules a file's ``from X import`` lines read (relative ones resolved), from the bytes alone."""
    module, is_package = project_module(rel)
    out = set()
    for match in line_start_matches(data, b"from", _FROM_IMPORT):
        text = match.group(1).decode("ascii", "replace")
        level = len(text) - len(text.lstrip("."))
        if not level:
            out.add(text)
            continue
        base = module.split(".") if is_package else module.split(".")[:-1]
        base = base[: len(base) - (level - 1)] if level > 1 else base
        out.add(".".join(base + ([text[level:]] if text[level:] else [])))
    return out


def _read(scan: ProjectScan, rel: str, path: Path, total: int) -> tuple[bytes | None, int]:
    try:
        size = path.stat().st_size
        if size > MAX_FILE_BYTES:
            scan.skipped.append((rel, f"over {MAX_FILE_BYTES} bytes"))
            return None, total
        total += size
        if total > MAX_TOTAL_BYTES:
            raise ProjectError(f"the project's Python files exceed {MAX_TOTAL_BYTES} bytes in all")
        return read_file(path, MAX_FILE_BYTES, "project file"), total
    except CandidateError as exc:
        scan.skipped.append((rel, str(exc)))
    except OSError as exc:
        scan.skipped.append((rel, exc.strerror or str(exc)))
    return None, total


def scan_project(root, *, cache: bool = True) -> ProjectScan:
    """Every use in the project. Names a project module re-exports (``from pkg.helper import mpu``, where helper
    imports mpu from megatron) are followed into the files that import them, a few links deep. ``cache``: reuse
    the results of files a run scanned before with the same inputs (scan_cache.py)."""
    root = Path(root)
    if not root.is_dir():
        raise ProjectError(f"project {str(root)!r} is not a directory")
    rounds = _Rounds(root, cache)
    rounds.first_round(rounds.read_files())
    rounds.reexport_rounds()
    reexports = rounds.subclass_rounds()
    resolve_whole_project(rounds, reexports, _read)
    rounds.store.save()
    return rounds.scan


class _Rounds:
    """The project's files and the rounds of scans over them: the files that spell megatron, then those that import
    what a scanned module re-exports, then those that use a project subclass of a megatron class or may subclass a
    forwarder's class (each round's inputs are what the rounds before found)."""

    def __init__(self, root: Path, cache: bool):
        self.files = list(_python_files(root))
        self.own = own_packages(rel for rel, _ in self.files)
        self.scan = ProjectScan(str(root), own_packages=list(self.own), sources=self.files)
        self.store = ScanCache.open(root) if cache else ScanCache(None, None, None)
        self.names_of = {rel: _module_names(rel) for rel, _ in self.files}
        self.per_file: dict[str, FileScan] = {}
        self.unparsed: set = set()
        self.exports: dict[str, dict] = {}  # project module -> {name: megatron paths}
        self.importers: dict[str, tuple] = {}  # rel -> (data, project modules it imports from)
        self.bases_of: dict[str, set] = {}  # rel -> the names its class lines subclass (project_classes.base_names)
        self.subclassed: set[str] = set()  # every name written as a base of a class anywhere in the project
        self.data_of: dict[str, bytes] = {}  # rel -> the bytes of each file a round may scan

    def scan_one(self, rel: str, data: bytes, with_exports: dict, fresh=None) -> set:
        """Scan one file; the project modules whose exports that changed. A file scanned before with the same view
        of the exports it imports is not scanned again (the result would be the same), but its exports are still
        published again, as a new scan would. ``fresh``: the file's scan, made in a worker process."""
        done = self.per_file.get(rel)
        if done is None or done.view != view_of(done.asked, with_exports) or _misses_words(done, data, with_exports):
            try:
                done = _scan_file(rel, data, self.own, with_exports, self.store, fresh)
            except CandidateError as exc:  # pysource: over a parse cap, or not valid Python
                if rel not in self.unparsed:
                    self.unparsed.add(rel)
                    reason = "does not parse" if isinstance(exc, SourceUnparsableError) else "not parsed"
                    self.scan.skipped.append((rel, f"{reason}: {exc}"))
                return set()
            self.per_file[rel] = done
        mine, names = done.exports, self.names_of[rel]
        for module in names:
            self.scan.classes.update({f"{module}.{name}": methods for name, methods in done.classes.items()})
            self.scan.factories.update({f"{module}.{name}": (found, rel) for name, found in done.factories.items()})
        changed = {name for name in names if mine and self.exports.get(name) != mine}
        self.exports.update({name: mine for name in changed})
        return changed

    def read_files(self) -> list:
        """Read every file once; the first round: the files that spell megatron, in order, each with the count of
        files skipped before it was read (the skipped list keeps the order of one pass)."""
        project_modules = {m for names in self.names_of.values() for m in names}
        first: list = []
        total = 0
        for rel, path in self.files:
            data, total = _read(self.scan, rel, path, total)
            if data is None:
                continue
            self.scan.files += 1
            if b"class" in data:
                self.bases_of[rel] = base_names(data)
                self.subclassed |= self.bases_of[rel]
            imported = _from_modules(data, rel) & project_modules if b"import" in data else set()
            if imported:
                self.importers[rel] = (data, imported)
            if b"megatron" in data:
                first.append((rel, data, len(self.scan.skipped)))
        self.data_of = {rel: data for rel, data, _skipped in first} | {
            rel: data for rel, (data, _imported) in self.importers.items()}
        return first

    def first_round(self, first: list) -> None:
        """The files that spell megatron, read with no exports (scanned in worker processes where that pays)."""
        scan = self.scan
        fresh = _first_round_in_workers(first, self.own, self.store)
        read_skips, scan.skipped, replayed = scan.skipped, [], 0
        for (rel, data, skipped_before), result in zip(first, fresh):
            scan.skipped += read_skips[replayed:skipped_before]
            replayed = skipped_before
            self.scan_one(rel, data, {}, result)
        scan.skipped += read_skips[replayed:]

    def reexport_rounds(self) -> None:
        """The files that import a name a scanned module re-exports, a few links deep."""
        changed = set(self.exports)
        for _round in range(REEXPORT_ROUNDS):
            now: set = set()
            for rel, (data, imported) in self.importers.items():
                names = {name for module in imported & changed for name in self.exports[module]}
                if any(name.encode() in data for name in names):  # it may import one of them (else nothing changes)
                    now |= self.scan_one(rel, data, self.exports)
            changed = now
            if not changed:
                break

    def subclass_rounds(self) -> Reexports:
        """Files that never say megatron but use a project subclass of its class, or may subclass a class whose
        method forwards **kwargs to megatron (and so redefine that method, or call it with keywords: a forwarder's
        method names are words the scan of such a file looks for)."""
        spelled: dict[str, frozenset] = {}  # rel -> its identifiers, read once for all rounds
        searched: set[bytes] = set()  # the names every file not in spelled was searched for
        reexports = Reexports(self.names_of, self.data_of.get, self.own)
        for _round in range(REEXPORT_ROUNDS):
            reexports.resolve(self.scan.classes)
            closed, subclassed_only = megatron_subclass_names(self.scan.classes, self.subclassed)
            used = closed | self.forwarder_subclasses()
            wanted = {name.encode() for name in used}
            if wanted - searched:  # the identifiers of a file not scanned yet, read the first time a round needs
                # them, only where its bytes hold a name somewhere (a whole token equal to a name is such a
                # substring); a file left out holds none of the names searched so far, so a later round searches
                # only new ones
                somewhere = _any_substring(wanted - searched)
                spelled.update((rel, _identifiers(data)) for rel, (data, _imported) in self.importers.items()
                               if rel not in spelled and rel not in self.per_file and rel not in self.unparsed
                               and somewhere.search(data))
                searched |= wanted
            more = [(rel, data) for rel, (data, _imported) in self.importers.items()
                    if rel not in self.per_file and rel not in self.unparsed
                    and (spelled.get(rel, frozenset()) & wanted or self.bases_of.get(rel, set()) & subclassed_only)]
            for rel, data in more:
                self.scan_one(rel, data, self.exports)
            if not more:
                break
        reexports.resolve(self.scan.classes)
        return reexports

    def forwarder_subclasses(self) -> set:
        """The names of the project classes below a forwarder's class; the files that subclass one are read again
        where they were read before the forwarders' method names were known (exports[FORWARDER_WORDS])."""
        classes = self.scan.classes
        methods = [key.rsplit(".", 1) for done in self.per_file.values() for key in done.forwarded]
        forwarder_classes = {origin for origin, _method in methods if origin in classes}
        # self.method(...) of a forwarder is read in a class below its class; a dunder is not called that way
        self.exports[FORWARDER_WORDS] = {WORDS: tuple(sorted({method for origin, method in methods if origin in
                                                              forwarder_classes and not method.startswith("__")}))}
        below = {origin.rpartition(".")[2] for origin in descendants(forwarder_classes, classes)}
        for rel in [rel for rel in self.per_file if self.bases_of.get(rel, set()) & below]:
            self.scan_one(rel, self.data_of[rel], self.exports)
        return below


_IDENTIFIER = re.compile(rb"[A-Za-z_][A-Za-z0-9_]*")
_DOTTED_PATH = re.compile(r"[A-Za-z_]\w*(\.[A-Za-z_]\w*)+")


def _identifiers(data: bytes) -> frozenset:
    """Every identifier-shaped word of a file's bytes, as bytes (a use of a class needs its name as a whole token:
    ``Config`` inside ``GPTConfig`` is not one)."""
    return frozenset(_IDENTIFIER.findall(data))


def _any_substring(words: set[bytes]) -> re.Pattern:
    """Matches where any of ``words`` occurs in bytes, token or not (cheaper than ``_identifiers`` on every file)."""
    return re.compile(b"|".join(re.escape(word) for word in sorted(words)))


def _misses_words(done: FileScan, data: bytes, exports: dict) -> bool:
    """A file scanned without the forwarders' method names (forwarding.FORWARDER_WORDS) that calls one of them."""
    words = (exports.get(FORWARDER_WORDS) or {}).get(WORDS)
    return bool(words) and (FORWARDER_WORDS, WORDS) not in done.asked and any(
        b"." + word.encode() + b"(" in data for word in words)


def _scan_file(rel: str, data: bytes, own: tuple, exports: dict, store: ScanCache, fresh=None) -> FileScan:
    """One file's scan with ``exports`` (from the cache when a run made the same one; ``fresh``: made in a worker
    process, a FileScan or the CandidateError it raised). CandidateError propagates."""
    key = store.key(rel, own, data)
    found = store.get(key, exports)
    if found is not None:
        return found
    result = fresh if fresh is not None else _new_scan(rel, data, own, exports)
    if isinstance(result, CandidateError):
        raise result
    store.put(key, result)
    return result


def _new_scan(rel: str, data: bytes, own: tuple, exports: dict) -> FileScan:
    scanner = _scan(data, rel, own, exports)
    return FileScan(scanner.uses, scanner.sets, scanner.module_exports(), frozenset(scanner.asked),
                    view_of(scanner.asked, exports), scanner.classes, scanner.forwarded, scanner.factories)


def _new_scan_or_error(rel: str, data: bytes, own: tuple) -> FileScan | CandidateError:
    """A worker process's job: one file of the first round (no exports), or the CandidateError it raises."""
    try:
        return _new_scan(rel, data, own, {})
    except CandidateError as exc:
        return exc


def _first_round_in_workers(first: list, own: tuple, store: ScanCache) -> list:
    """Per file of the first round: its scan made in a worker process, or None (cached, or scanned here, later:
    pool.py decides whether workers pay)."""
    jobs = [(index, rel, data) for index, (rel, data, _skipped) in enumerate(first)
            if store.get(store.key(rel, own, data), {}) is None]
    made = map_in_workers(_new_scan_or_error, [(rel, data, own) for _index, rel, data in jobs],
                          [len(data) for _index, _rel, data in jobs]) if len(jobs) > 1 else None
    fresh: list = [None] * len(first)
    for (index, _rel, _data), result in zip(jobs, made or ()):
        fresh[index] = result
    return fresh
