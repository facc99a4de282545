# SPDX-License-Identifier: Apache-2.0
"""Bounded, in-memory reads of a wheel, an sdist or a source tree. Nothing is unpacked to disk, imported or run.

Every read is capped: the archive itself, each member, the number of members, a zip's central directory and the
decompressed tar stream. A cap that is hit raises ``CandidateError`` naming the cap, so the CLI exits 3 with one
line. Only regular files are read: a FIFO or a device (``/dev/zero``) is refused without blocking (opened
non-blocking, checked with fstat, then read). Compressed tar streams are decompressed here through a capped reader,
and a member or extended header (pax record, GNU long name) that claims more than its cap is refused from its
header, before tarfile reads or skips it.
"""
from __future__ import annotations

import functools
import importlib
import io
import os
import posixpath
import re
import stat
import tarfile
import zipfile
from pathlib import Path, PurePosixPath

from ..bounded_read import MAX_MEMBER_BYTES, MIB, read_file  # noqa: F401  (read_file: re-exported for the tooling)
from ..errors import CandidateError, one_line, shown

MAX_ARCHIVE_BYTES = 256 * MIB  # megatron-core wheels are 1-4 MB, sdists under 20 MB
MAX_METADATA_BYTES = 1 * MIB
MAX_MEMBERS = 50_000  # files in an archive; files and directories walked in a tree
MAX_TAR_STREAM_BYTES = 256 * MIB  # how much of a decompressed tar stream we read (sdists unpack to < 30 MB)
MAX_ZIP_DIRECTORY_BYTES = MAX_MEMBERS * 160  # a zip's central directory is parsed whole, before any count check
MAX_TAR_HEADER_BYTES = 1 * MIB  # a pax record or GNU long name, which tarfile reads whole before the next member
MAX_TAR_HEADERS_TOTAL = 16 * MIB  # all of them together (pax global headers accumulate in one dict)
_TAR_EXTENDED_HEADERS = {tarfile.XHDTYPE, tarfile.XGLTYPE, tarfile.SOLARIS_XHDTYPE, tarfile.GNUTYPE_LONGNAME,
                         tarfile.GNUTYPE_LONGLINK}
MAX_XZ_MEMORY = 128 * MIB  # an .xz header may ask for a 1.5 GiB dictionary; liblzma refuses past this
_COMPRESSIONS = ((b"\x1f\x8b", "gzip"), (b"BZh", "bz2"), (b"\xfd7zXZ\x00", "lzma"))
_DIST_INFO_METADATA = re.compile(r"[^/]+\.dist-info/METADATA")
_READ_ERRORS = (zipfile.BadZipFile, zipfile.LargeZipFile, tarfile.TarError, OSError, EOFError, ValueError,
                NotImplementedError, RuntimeError, KeyError, IndexError, OverflowError)  # RuntimeError: encrypted zip


def _show(path) -> str:
    """A path for a one-line message: repr() escapes newlines and control characters."""
    return shown(path)


def _flat(exc: BaseException) -> str:
    return one_line(exc, 300) or type(exc).__name__


class _StreamCapHit(Exception):
    """Raised inside tarfile's reads; turned into a CandidateError by Source (tarfile would rewrap a ValueError)."""


class _CappedReader(io.RawIOBase):
    """A read-only stream that refuses to deliver more than ``cap`` bytes of ``raw`` (a decompressor)."""

    def __init__(self, raw, cap: int):
        self._raw, self._cap, self._pos = raw, cap, 0

    def readable(self) -> bool:
        return True

    def readinto(self, buffer) -> int:
        room = self._cap - self._pos
        if room <= 0:
            if self._raw.read(1):
                raise _StreamCapHit()
            return 0
        view = memoryview(buffer)[:room]
        data = self._raw.read(len(view))
        view[:len(data)] = data
        self._pos += len(data)
        return len(data)


def _decompressor(data: bytes):
    """A file object of the decompressed tar stream (gzip, bz2, xz, or plain tar)."""
    for magic, module in _COMPRESSIONS:
        if data.startswith(magic):
            try:
                mod = importlib.import_module(module)
            except ImportError:
                raise CandidateError(f"this Python has no {module} module to decompress the sdist") from None
            if module == "gzip":
                return mod.GzipFile(fileobj=io.BytesIO(data))
            if module == "bz2":
                return _Decompressing(data, mod.BZ2Decompressor)
            return _Decompressing(data, functools.partial(mod.LZMADecompressor, memlimit=MAX_XZ_MEMORY))
    return io.BytesIO(data)


class _Decompressing(io.RawIOBase):
    """Incremental bz2/xz decompression (several concatenated streams), ``max_length`` at a time; unlike LZMAFile
    it lets the xz decompressor have a memory limit."""

    def __init__(self, data: bytes, factory):
        self._src, self._factory = io.BytesIO(data), factory
        self._dec = factory()

    def readable(self) -> bool:
        return True

    def readinto(self, buffer) -> int:
        while True:
            if self._dec.eof:
                rest = self._dec.unused_data + self._src.read()
                if not rest:
                    return 0
                self._dec, self._src = self._factory(), io.BytesIO(rest)
            chunk = self._src.read(1 << 16) if self._dec.needs_input else b""
            if self._dec.needs_input and not chunk:
                raise EOFError("compressed stream ended before the end-of-stream marker")
            try:
                out = self._dec.decompress(chunk, len(buffer))
            except Exception as exc:  # lzma.LZMAError (memory limit, corrupt data) is not an OSError
                raise OSError(f"{type(exc).__name__}: {exc}") from None
            if out:
                buffer[:len(out)] = out
                return len(out)


class _BoundedTarInfo(tarfile.TarInfo):
    """tarfile's header parsing, minus what a header can make it hold in memory: an extended header (pax record,
    GNU long name) over MAX_TAR_HEADER_BYTES is refused before it is read, and so is every sparse member (old GNU
    sparse headers chain extension blocks without end; a pax GNU.sparse 1.0 map is read to a count the data gives).
    The hooks are TarInfo's own methods, which TarFile calls through ``tarinfo=``; the stream cap stays underneath."""

    def _proc_member(self, tarfile_):  # called by TarInfo.fromtarfile for every header
        if self.type in _TAR_EXTENDED_HEADERS:
            if self.size > MAX_TAR_HEADER_BYTES:
                raise CandidateError(f"an extended tar header ({_show(self.name)}) claims {self.size} bytes, over "
                                     f"the {MAX_TAR_HEADER_BYTES}-byte cap")
            total = getattr(tarfile_, "_compat_extended_bytes", 0) + self.size
            if total > MAX_TAR_HEADERS_TOTAL:
                raise CandidateError(f"the extended tar headers add up to over the {MAX_TAR_HEADERS_TOTAL}-byte cap")
            tarfile_._compat_extended_bytes = total
        if self.type == tarfile.GNUTYPE_SPARSE:
            self._refuse_sparse()
        return super()._proc_member(tarfile_)

    def _refuse_sparse(self, *args):  # pax variants get (next member, pax headers, tarfile)
        member = args[0] if args and isinstance(args[0], tarfile.TarInfo) else self
        raise CandidateError(f"tar member {_show(member.name)} is a sparse file; sparse members are not read")

    _proc_gnusparse_00 = _proc_gnusparse_01 = _proc_gnusparse_10 = _refuse_sparse


class _TarMember:
    __slots__ = ("size", "data")

    def __init__(self, size: int, data: bytes | None):
        self.size, self.data = size, data


class Source:
    """Uniform, bounded access to a wheel, an sdist or a source tree (a Megatron-LM checkout)."""

    def __init__(self, path: Path):
        self.path, self.label = path, path.name or str(path)
        self._zip = None
        self._members: dict[str, object] = {}
        if _is_real_dir(path):
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
            self._check_zip_directory(data)
            self._zip = zipfile.ZipFile(io.BytesIO(data))
            infos = self._zip.infolist()
        except CandidateError:
            raise
        except _READ_ERRORS as exc:
            raise CandidateError(f"{_show(self.label)} is not a readable wheel: {_flat(exc)}") from None
        if len(infos) > MAX_MEMBERS:
            raise CandidateError(f"{_show(self.label)} has {len(infos)} members, over the {MAX_MEMBERS} cap")
        for info in infos:
            if not info.is_dir():
                self._add(_wheel_install_path(info.filename), info)

    def _check_zip_directory(self, data: bytes) -> None:
        """zipfile parses the whole central directory into memory: refuse a huge one from its end record first."""
        end = zipfile._EndRecData(io.BytesIO(data))  # noqa: SLF001  (stable since Python 2; no public equivalent)
        if not end:
            return  # zipfile raises its own BadZipFile
        entries, size = end[zipfile._ECD_ENTRIES_TOTAL], end[zipfile._ECD_SIZE]  # noqa: SLF001
        if entries > MAX_MEMBERS or size > MAX_ZIP_DIRECTORY_BYTES:
            raise CandidateError(f"{_show(self.label)} lists {entries} members in a {size}-byte directory, over the "
                                 f"{MAX_MEMBERS}-member / {MAX_ZIP_DIRECTORY_BYTES}-byte cap")

    def _open_tar(self, data: bytes) -> None:
        """One pass over the decompressed stream, keeping each regular member of at most MAX_MEMBER_BYTES."""
        count = 0
        try:
            with tarfile.open(fileobj=_CappedReader(_decompressor(data), MAX_TAR_STREAM_BYTES), mode="r|",
                              tarinfo=_BoundedTarInfo) as tar:
                for member in tar:
                    count += 1
                    if count > MAX_MEMBERS:
                        raise CandidateError(f"{_show(self.label)} has over {MAX_MEMBERS} members")
                    if member.offset_data + member.size > MAX_TAR_STREAM_BYTES:  # refused before it is inflated
                        raise CandidateError(f"{_show(self.label)} unpacks past the {MAX_TAR_STREAM_BYTES}-byte cap "
                                             f"(member {_show(member.name)} claims {member.size} bytes)")
                    if not member.isfile():
                        continue
                    body = None
                    if member.size <= MAX_MEMBER_BYTES:
                        handle = tar.extractfile(member)
                        body = handle.read(member.size + 1) if handle else b""
                    self._add(member.name, _TarMember(member.size, body))
        except CandidateError:
            raise
        except _StreamCapHit:
            raise CandidateError(f"{_show(self.label)} unpacks past the {MAX_TAR_STREAM_BYTES}-byte cap") from None
        except _READ_ERRORS as exc:
            raise CandidateError(f"{_show(self.label)} is not a readable wheel or sdist: {_flat(exc)}") from None

    def _add(self, raw_name: str, member) -> None:
        """Keep a member under the path it would be installed at; two members at one path are refused (an
        installer keeps the last one, a reader might read the first)."""
        name = posixpath.normpath(raw_name.replace("\\", "/")).lstrip("/")
        if name in (".", "..") or name.startswith("../"):
            raise CandidateError(f"{_show(self.label)} has a member outside its root: {_show(raw_name)}")
        if name in self._members:
            raise CandidateError(f"{_show(self.label)} has two members at {_show(name)}; an installer keeps only "
                                 "the last one, so it is not read")
        self._members[name] = member

    # ---- names -------------------------------------------------------------------------------------------------
    def names(self) -> list[str]:
        if self.kind == "tree":
            return sorted(self._walk(self.path))
        return list(self._members)

    def _walk(self, root: Path):
        """Regular files under ``root`` (posix paths relative to the source), not following symlinks."""
        count = 0
        for dirpath, dirnames, filenames in os.walk(root):
            dirnames[:] = sorted(d for d in dirnames if not d.startswith(".") and d != "__pycache__"
                                 and not os.path.islink(os.path.join(dirpath, d)))
            rel = Path(dirpath).relative_to(self.path).as_posix()
            count += len(dirnames) + len(filenames)
            if count > MAX_MEMBERS:
                raise CandidateError(f"{_show(self.path)} holds over {MAX_MEMBERS} files and directories under "
                                     f"{_show(Path(root).relative_to(self.path).as_posix())}")
            for name in filenames:
                yield name if rel == "." else f"{rel}/{name}"

    def find(self, suffix: str) -> str | None:
        """The member named ``suffix`` or ending in ``/suffix`` (the shortest such name)."""
        if self.kind == "tree":
            p = self.path / suffix
            return suffix if _is_real_file(p) else None
        hits = [n for n in self._members if n == suffix or n.endswith("/" + suffix)]
        return min(hits, key=len) if hits else None

    def package_root(self, package: str = "megatron") -> str | None:
        """The prefix under which ``package/`` sits ("" for a wheel or checkout, "name-1.0/" for an sdist)."""
        if self.kind == "tree":
            return "" if _is_real_dir(self.path / package) else None
        if self.kind == "wheel":
            project = ""  # a wheel installs from its root (and its .data/purelib, mapped there by _add)
        else:
            project = self._sdist_project_dir()
        found = [root for root in (project, project + "src/")
                 if any(n.startswith(root + package + "/") for n in self._members)]
        if len(found) > 1:
            raise CandidateError(f"{_show(self.label)} holds both {package}/ and src/{package}/ in "
                                 f"{_show(project or '.')}: which one an installer builds depends on its build "
                                 "configuration, so neither is read")
        return found[0] if found else None

    def _sdist_project_dir(self) -> str:
        """Where an installer builds an sdist from: its one top-level directory, or the archive root when the
        members do not all share one (pip strips a common leading directory only) and the root has a build file."""
        tops = {n.partition("/")[0] if "/" in n else None for n in self._members}
        if len(tops) == 1 and None not in tops:
            return f"{tops.pop()}/"
        if "pyproject.toml" in self._members or "setup.py" in self._members:
            return ""
        raise CandidateError(f"{_show(self.label)} has no single top-level directory and no pyproject.toml or "
                             "setup.py at its root: an installer would not build it, so it is not read")

    def python_files(self, package: str = "megatron") -> list[str]:
        """Every ``.py`` file under ``package/``, as paths relative to the package root (``megatron/core/x.py``)."""
        root = self.package_root(package)
        if root is None:
            return []
        if self.kind == "tree":
            return sorted(n for n in self._walk(self.path / package) if n.endswith(".py"))
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
            return read_file(path, limit, "source file", follow_symlinks=False)
        member = self._members.get(name)
        if member is None:
            raise CandidateError(f"{_show(self.label)} has no member {_show(name)}")
        size = member.file_size if self._zip else member.size
        if size > limit:
            raise CandidateError(f"{_show(name)} in {_show(self.label)} is {size} bytes, over the {limit}-byte cap")
        if not self._zip:
            if member.data is None:  # not kept in the single pass over the stream
                raise CandidateError(f"{_show(name)} in {_show(self.label)} is {size} bytes, over the "
                                     f"{MAX_MEMBER_BYTES}-byte member cap")
            data = member.data
        else:
            try:
                with self._zip.open(member) as handle:
                    data = handle.read(limit + 1)
            except _READ_ERRORS as exc:
                raise CandidateError(f"cannot read {_show(name)} from {_show(self.label)}: {_flat(exc)}") from None
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
            return self.read(name, limit) if os.path.lexists(self.path / name) else None
        return self.read(name, limit) if name in self._members else None

    def metadata(self) -> dict[str, str]:
        """Headers of the wheel's METADATA or the sdist's PKG-INFO (bounded); {} for a tree or when absent."""
        headers = self.metadata_headers(("Name", "Version", "Requires-Python"))
        return {k: values[-1] for k, values in headers.items()}  # a repeated header: the last one, as before

    def metadata_headers(self, names) -> dict[str, list[str]]:
        """Every value of each header in ``names`` (Requires-Dist repeats), whitespace folded; {} without METADATA."""
        meta = None
        if self.kind == "wheel":
            meta = next((n for n in self._members if _DIST_INFO_METADATA.fullmatch(n)), None)
        elif self.kind == "sdist":
            meta = self._sdist_project_dir() + "PKG-INFO"
            meta = meta if meta in self._members else None
        if not meta:
            return {}
        from email.parser import HeaderParser  # ~10 ms of email imports: only for a candidate's METADATA

        headers = HeaderParser().parsestr(self.read(meta, MAX_METADATA_BYTES).decode("utf-8", "replace"))
        out: dict[str, list[str]] = {}
        for k, v in headers.items():
            if k in names:
                out.setdefault(k, []).append(" ".join(str(v).split()))
        return out


_WHEEL_DATA = re.compile(r"[^/]+\.data/(?:purelib|platlib)/")


def _wheel_install_path(name: str) -> str:
    """Where a wheel member lands in site-packages: ``x.data/purelib/megatron/...`` lands at ``megatron/...``."""
    match = _WHEEL_DATA.match(name)
    return name[match.end():] if match else name


def _is_real_dir(path: Path) -> bool:
    try:
        return stat.S_ISDIR(os.lstat(path).st_mode)
    except (OSError, ValueError):
        return False


def _is_real_file(path: Path) -> bool:
    try:
        return stat.S_ISREG(os.lstat(path).st_mode)
    except (OSError, ValueError):
        return False


def open_source(path) -> Source:
    """A bounded reader for a wheel, an sdist or a source tree; ``CandidateError`` if it cannot be read."""
    path = Path(path)
    try:
        os.lstat(path)
    except FileNotFoundError:
        raise CandidateError(f"candidate {_show(path)} does not exist") from None
    except (OSError, ValueError) as exc:
        raise CandidateError(f"cannot read candidate {_show(path)}: {getattr(exc, 'strerror', None) or _flat(exc)}"
                             ) from None
    return Source(path)
