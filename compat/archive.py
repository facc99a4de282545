"""Bounded, in-memory reads of a wheel, an sdist or a source tree. Nothing is unpacked to disk, imported or run.

Every read is capped: the archive itself, each member, the number of members and (for tar) how far into the
decompressed stream a member may sit. A cap that is hit raises ``CandidateError`` naming the cap, so the CLI
exits 3 with one line. Only regular files are read: a FIFO or a device (``/dev/zero``) is refused, not opened.
"""
from __future__ import annotations

import io
import os
import re
import stat
import tarfile
import zipfile
from email.parser import HeaderParser
from pathlib import Path, PurePosixPath

from .errors import CandidateError

MIB = 1 << 20
MAX_ARCHIVE_BYTES = 256 * MIB  # megatron-core wheels are 1-4 MB, sdists under 20 MB
MAX_MEMBER_BYTES = 8 * MIB  # the largest megatron .py file is under 1 MB
MAX_METADATA_BYTES = 1 * MIB
MAX_MEMBERS = 50_000
MAX_TAR_STREAM_BYTES = 1024 * MIB  # how far into a compressed tar stream we follow members
_DIST_INFO_METADATA = re.compile(r"[^/]+\.dist-info/METADATA")


def _regular_file(path: Path, what: str) -> os.stat_result:
    try:
        st = path.stat()
    except OSError as exc:
        raise CandidateError(f"cannot read {what} {_show(path)}: {exc.strerror or exc}") from None
    if not stat.S_ISREG(st.st_mode):
        raise CandidateError(f"{what} {_show(path)} is not a regular file (a FIFO, device or socket is not read)")
    return st


def _show(path) -> str:
    """A path for a one-line message: repr() escapes newlines and control characters."""
    text = str(path)
    return repr(text if len(text) <= 200 else text[:200] + "...")


def read_file(path: Path, limit: int = MAX_MEMBER_BYTES, what: str = "file") -> bytes:
    """A regular file's bytes, refusing anything over ``limit``."""
    st = _regular_file(path, what)
    if st.st_size > limit:
        raise CandidateError(f"{what} {_show(path)} is {st.st_size} bytes, over the {limit}-byte read cap")
    try:
        with open(path, "rb") as fh:
            data = fh.read(limit + 1)
    except OSError as exc:
        raise CandidateError(f"cannot read {what} {_show(path)}: {exc.strerror or exc}") from None
    if len(data) > limit:
        raise CandidateError(f"{what} {_show(path)} grew past the {limit}-byte read cap while being read")
    return data


class Source:
    """Uniform, bounded access to a wheel, an sdist or a source tree (a Megatron-LM checkout)."""

    def __init__(self, path: Path):
        self.path, self.label = path, path.name or str(path)
        self._zip = self._tar = None
        self._members: dict[str, object] = {}
        if path.is_dir() and not path.is_symlink():
            self.kind = "tree"
            return
        data = read_file(path, MAX_ARCHIVE_BYTES, "candidate")
        if path.suffix == ".whl" or zipfile.is_zipfile(io.BytesIO(data)):
            self.kind = "wheel"
            self._open_zip(data)
        else:
            self.kind = "sdist"
            self._open_tar(data)

    # ---- opening -----------------------------------------------------------------------------------------------
    def _open_zip(self, data: bytes) -> None:
        try:
            self._zip = zipfile.ZipFile(io.BytesIO(data))
            infos = self._zip.infolist()
        except (zipfile.BadZipFile, OSError, EOFError, ValueError) as exc:
            raise CandidateError(f"{_show(self.label)} is not a readable wheel: {exc}") from None
        if len(infos) > MAX_MEMBERS:
            raise CandidateError(f"{_show(self.label)} has {len(infos)} members, over the {MAX_MEMBERS} cap")
        for info in infos:
            if not info.is_dir():
                self._members.setdefault(info.filename, info)

    def _open_tar(self, data: bytes) -> None:
        try:
            self._tar = tarfile.open(fileobj=io.BytesIO(data), mode="r:*")
            count = 0
            while (member := self._tar.next()) is not None:
                count += 1
                if count > MAX_MEMBERS:
                    raise CandidateError(f"{_show(self.label)} has over {MAX_MEMBERS} members")
                if member.offset_data + member.size > MAX_TAR_STREAM_BYTES:
                    raise CandidateError(f"{_show(self.label)} unpacks past the {MAX_TAR_STREAM_BYTES}-byte cap")
                if member.isfile():
                    self._members.setdefault(member.name, member)
        except (tarfile.TarError, EOFError, OSError, ValueError) as exc:
            raise CandidateError(f"{_show(self.label)} is not a readable wheel or sdist: "
                                 f"{' '.join(str(exc).split())}") from None

    # ---- names -------------------------------------------------------------------------------------------------
    def names(self) -> list[str]:
        if self.kind == "tree":
            return sorted(self._walk(self.path, ""))
        return list(self._members)

    def _walk(self, root: Path, prefix: str):
        """Regular files under ``root`` (posix paths relative to the source), not following symlinks."""
        count = 0
        for dirpath, dirnames, filenames in os.walk(root):
            dirnames[:] = sorted(d for d in dirnames if not d.startswith(".") and d != "__pycache__"
                                 and not os.path.islink(os.path.join(dirpath, d)))
            rel = Path(dirpath).relative_to(self.path).as_posix()
            for name in filenames:
                count += 1
                if count > MAX_MEMBERS:
                    raise CandidateError(f"{_show(self.path)} holds over {MAX_MEMBERS} files under {prefix or '.'}")
                yield name if rel == "." else f"{rel}/{name}"

    def find(self, suffix: str) -> str | None:
        """The member named ``suffix`` or ending in ``/suffix`` (the shortest such name)."""
        if self.kind == "tree":
            p = self.path / suffix
            return suffix if p.is_file() and not p.is_symlink() else None
        hits = [n for n in self._members if n == suffix or n.endswith("/" + suffix)]
        return min(hits, key=len) if hits else None

    def package_root(self, package: str = "megatron") -> str | None:
        """The prefix under which ``package/`` sits ("" for a wheel or checkout, "name-1.0/" for an sdist)."""
        if self.kind == "tree":
            return "" if (self.path / package).is_dir() else None
        roots = {n[: n.index(package + "/")] for n in self._members if f"{package}/" in n
                 and (n.startswith(package + "/") or f"/{package}/" in n)}
        return min(roots, key=len) if roots else None

    def python_files(self, package: str = "megatron") -> list[str]:
        """Every ``.py`` file under ``package/``, as paths relative to the package root (``megatron/core/x.py``)."""
        root = self.package_root(package)
        if root is None:
            return []
        if self.kind == "tree":
            return sorted(f"{package}/{n}" for n in self._walk(self.path / package, package) if n.endswith(".py"))
        return sorted(n[len(root):] for n in self._members if n.startswith(root + package + "/") and n.endswith(".py"))

    # ---- reading -----------------------------------------------------------------------------------------------
    def read(self, name: str, limit: int = MAX_MEMBER_BYTES) -> bytes:
        """One member's bytes (``name`` as returned by find/names), refusing anything over ``limit``."""
        if self.kind == "tree":
            path = self.path
            for part in PurePosixPath(name).parts:
                path = path / part
                if part == ".." or path.is_symlink():
                    raise CandidateError(f"{_show(name)} in {_show(self.path)} leaves the tree or is a symlink")
            return read_file(path, limit, "source file")
        member = self._members.get(name)
        if member is None:
            raise CandidateError(f"{_show(self.label)} has no member {_show(name)}")
        size = member.file_size if self._zip else member.size
        if size > limit:
            raise CandidateError(f"{_show(name)} in {_show(self.label)} is {size} bytes, over the {limit}-byte cap")
        try:
            handle = self._zip.open(member) if self._zip else self._tar.extractfile(member)
            data = handle.read(limit + 1) if handle else b""
        except (zipfile.BadZipFile, tarfile.TarError, OSError, EOFError, ValueError, NotImplementedError) as exc:
            raise CandidateError(f"cannot read {_show(name)} from {_show(self.label)}: "
                                 f"{' '.join(str(exc).split())}") from None
        if len(data) > limit:  # a header that lies about the size
            raise CandidateError(f"{_show(name)} in {_show(self.label)} inflates past the {limit}-byte cap")
        return data

    def read_relative(self, rel: str, package: str = "megatron", limit: int = MAX_MEMBER_BYTES) -> bytes | None:
        """A file by its path relative to the package root (``megatron/core/x.py``), or None if absent."""
        root = self.package_root(package)
        if root is None:
            return None
        name = root + rel
        if self.kind == "tree":
            return self.read(name, limit) if (self.path / name).is_file() else None
        return self.read(name, limit) if name in self._members else None

    def metadata(self) -> dict[str, str]:
        """Headers of the wheel's METADATA or the sdist's PKG-INFO (bounded); {} for a tree or when absent."""
        meta = None
        if self.kind == "wheel":
            meta = next((n for n in self._members if _DIST_INFO_METADATA.fullmatch(n)), None)
        elif self.kind == "sdist":
            meta = min((n for n in self._members if PurePosixPath(n).name == "PKG-INFO"), key=len, default=None)
        if not meta:
            return {}
        headers = HeaderParser().parsestr(self.read(meta, MAX_METADATA_BYTES).decode("utf-8", "replace"))
        return {k: " ".join(str(v).split()) for k, v in headers.items() if k in ("Name", "Version", "Requires-Python")}


def open_source(path) -> Source:
    """A bounded reader for a wheel, an sdist or a source tree; ``CandidateError`` if it cannot be read."""
    path = Path(path)
    if not path.exists() and not path.is_symlink():
        raise CandidateError(f"candidate {_show(path)} does not exist")
    return Source(path)
