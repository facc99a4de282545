# SPDX-License-Identifier: Apache-2.0
"""The project scan's results per file, kept between runs so that a warm run parses only what changed.

One file per project directory under ``cache_dir()/scan``: ``<HMAC-SHA256>\\n<pickle>``, the HMAC keyed by the same
secret of this account as the model cache (cache.py) over the body, checked before anything is unpickled: an entry
edited, truncated or written without the secret is ignored and the project is scanned again. A file's results are
keyed by the source of this package's modules (any change to the scanning code makes new keys) and the Python
that parsed it, the file's relative path, the project's own megatron packages and the file's bytes; for each such
file the results are kept per *view*: what the project's other modules export under the names the file imports
(``from pkg.helper import mpu``), the only other input of a scan. Reads are bounded, writes atomic; an entry not
used by a run is dropped when it saves, and so is the cache of a project not scanned for 30 days.
"""
from __future__ import annotations

import hashlib
import hmac
import os
import pickle
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from ....errors import CompatError
from ...archive import read_file
from ...fsutil import WriteError, atomic_write_bytes
from .cache import cache_dir, cache_key

MAX_SCAN_CACHE_BYTES = 256 << 20
STALE_AFTER_S = 30 * 86400
_FORMAT = b"surface-scan 1\n"


@dataclass
class FileScan:
    """What one scan of one file gives: its uses, the megatron names it assigns, what it exports at module level,
    the ``(module, name)`` pairs it imports from project modules, the view of those it was scanned with, and the
    methods of its classes (for the spec checks of overrides.py)."""
    uses: list
    sets: set
    exports: dict
    asked: frozenset
    view: tuple = ()
    classes: dict = field(default_factory=dict)  # its top-level classes: name -> {method: signature, BASES: ...}
    forwarded: dict = field(default_factory=dict)  # forwarding.py: functions passing **kwargs on to megatron
    factories: dict = field(default_factory=dict)  # its top-level functions that return functions (providers.py)


def view_of(asked, exports: dict) -> tuple:
    """The values ``exports`` gives the names a file imports from project modules (a scan's only other input)."""
    return tuple(sorted((module, name, (exports.get(module) or {}).get(name)) for module, name in asked))


def scanner_sources() -> list[Path]:
    """The source files a scan's results depend on: every module of this package and its subpackages (the
    detectors), and the AST helpers they share with the rest of the tooling (not only the scanner's: a helper it
    comes to import is covered too)."""
    here = Path(__file__).resolve().parent
    return sorted(here.rglob("*.py")) + [here.parents[1] / "ast_tools.py"]


def _scanner_digest() -> bytes | None:
    root = Path(__file__).resolve().parents[2]
    digest = hashlib.sha256(_FORMAT + sys.version.encode())  # the trees ast.parse gives differ between Pythons
    try:
        modules = scanner_sources()
        for path in modules:
            digest.update(path.relative_to(root).as_posix().encode() + b"\0" + path.read_bytes())
    except OSError:  # no source beside the code (a frozen or zipped install): nothing is cached
        return None
    return digest.digest() if modules else None


@dataclass
class ScanCache:
    """The results of one project's files: ``get`` before a scan, ``put`` after it, ``save`` at the end."""
    path: Path | None
    secret: bytes | None
    scanner: bytes | None
    entries: dict = field(default_factory=dict)  # file key -> {view: FileScan}
    used: dict = field(default_factory=dict)
    added: bool = False

    @classmethod
    def open(cls, root: Path) -> ScanCache:
        secret, _problem = cache_key()
        scanner = _scanner_digest()
        if secret is None or scanner is None:
            return cls(None, None, None)
        name = hashlib.sha256(str(root.resolve()).encode("utf-8", "surrogateescape")).hexdigest()
        cache = cls(cache_dir() / "scan" / f"{name}.scan", secret, scanner)
        cache.entries = cache._load()
        return cache

    def _mac(self, body: bytes) -> bytes:
        return hmac.new(self.secret, _FORMAT + self.scanner + body, hashlib.sha256).hexdigest().encode("ascii")

    def _load(self) -> dict:
        if not self.path.is_file() or self.path.is_symlink():
            return {}
        try:
            raw = read_file(self.path, MAX_SCAN_CACHE_BYTES, "scan cache", follow_symlinks=False)
            digest, _, body = raw.partition(b"\n")
            if not hmac.compare_digest(digest, self._mac(body)):
                return {}
            entries = pickle.loads(body)  # noqa: S301 - written by this account: the HMAC above says so
        except (CompatError, OSError, ValueError, EOFError, pickle.UnpicklingError):
            return {}
        return entries if isinstance(entries, dict) else {}

    def key(self, rel: str, own: tuple, data: bytes) -> bytes | None:
        if self.path is None:
            return None
        digest = hashlib.sha256(self.scanner)
        for part in (rel.encode("utf-8", "surrogateescape"), "\0".join(own).encode()):
            digest.update(len(part).to_bytes(8, "big") + part)
        digest.update(data)
        return digest.digest()

    def get(self, key: bytes | None, exports: dict) -> FileScan | None:
        """The result of scanning this file with ``exports``, when a run made it before."""
        views = self.entries.get(key) if key is not None else None
        if not views:
            return None
        asked = next(iter(views.values())).asked
        found = views.get(view_of(asked, exports))
        if found is not None:
            self.used.setdefault(key, {})[found.view] = found
        return found

    def put(self, key: bytes | None, result: FileScan) -> None:
        if key is not None:
            self.used.setdefault(key, {})[result.view] = result
            self.added = True

    def save(self) -> str | None:
        """Write what this run used; returns why it could not (the scan stands), or None."""
        if self.path is None:
            return None
        if not self.added and {k: set(v) for k, v in self.used.items()} == {k: set(v) for k, v in self.entries.items()}:
            try:
                os.utime(self.path)  # read, not rewritten: still in use (see _drop_stale)
            except OSError:
                pass
            return None
        body = pickle.dumps(self.used, protocol=pickle.HIGHEST_PROTOCOL)
        if len(body) > MAX_SCAN_CACHE_BYTES:
            return "the scan cache would exceed its size cap"
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            atomic_write_bytes(self.path, self._mac(body) + b"\n" + body)
            _drop_stale(self.path.parent)
        except (OSError, WriteError) as exc:
            return str(exc)
        return None


def _drop_stale(directory: Path) -> None:
    """Scan caches of projects no run has scanned for STALE_AFTER_S (temporary checkouts leave one each)."""
    now = time.time()
    for entry in directory.glob("*.scan"):
        try:
            if not entry.is_symlink() and now - entry.stat().st_mtime > STALE_AFTER_S:
                entry.unlink()
        except OSError:
            continue
