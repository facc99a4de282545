# SPDX-License-Identifier: Apache-2.0
"""Atomic writes: a temp file in the target's directory, fsync, then ``os.replace``. A crash or a full disk leaves
the old file intact, never a truncated one. ``locked`` serialises read-modify-write cycles across processes."""
from __future__ import annotations

import contextlib
import errno
import os
import tempfile
import threading
import time
from pathlib import Path

try:
    import fcntl
except ImportError:  # Windows
    fcntl = None
    import msvcrt

from ..errors import CompatError


class WriteError(CompatError):
    """A file could not be written (the previous content, if any, is left unchanged)."""


def atomic_write_bytes(path, data: bytes) -> None:
    path = Path(path)
    # The rename would replace a read-only file as easily as any other; a file its owner made read-only is kept.
    if os.path.isfile(path) and not os.path.islink(path) and not os.access(path, os.W_OK):
        raise WriteError(f"cannot write {str(path)!r}: it is read-only; the previous content is unchanged")
    fd, tmp = None, None
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
        with os.fdopen(fd, "wb") as fh:
            fd = None
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        if path.exists():
            os.chmod(tmp, path.stat().st_mode & 0o7777)
        else:
            umask = os.umask(0)
            os.umask(umask)
            os.chmod(tmp, 0o666 & ~umask)
        os.replace(tmp, path)
        tmp = None
    except OSError as exc:
        raise WriteError(f"cannot write {str(path)!r}: {exc.strerror or exc}; the previous content is unchanged") from None
    finally:
        if fd is not None:
            os.close(fd)
        if tmp is not None and os.path.exists(tmp):
            os.unlink(tmp)


def atomic_write_text(path, text: str) -> None:
    atomic_write_bytes(path, text.encode("utf-8"))


LOCK_TIMEOUT_S = 300.0


_HELD: set = set()  # (device, inode, thread) of the lock files this process's threads hold


def same_file(a, b) -> bool:
    """Whether two paths name one file (through symlinks, hard links or spellings), existing or not."""
    try:
        return os.path.samefile(a, b)
    except (OSError, ValueError):
        return os.path.realpath(a) == os.path.realpath(b)


@contextlib.contextmanager
def locked(path, timeout: float = LOCK_TIMEOUT_S):
    """Hold an exclusive lock on ``.NAME.lock`` beside ``path`` for a read-modify-write of ``path``.

    An advisory OS lock (``fcntl.flock``; ``msvcrt.locking`` on Windows), released when the process dies. The lock
    file is left in place: deleting it would let a waiting process lock an unlinked inode."""
    path = Path(path)
    if not path.name or os.path.isdir(path):  # "", ".", "/" or a directory: nothing to lock beside
        raise WriteError(f"{str(path)!r} is a directory, not a file; nothing was written")
    lock_path = path.with_name(f".{path.name}.lock")
    try:
        fd = os.open(lock_path, os.O_RDWR | os.O_CREAT, 0o666)
    except OSError as exc:
        raise WriteError(f"cannot create the lock file {str(lock_path)!r}: {exc.strerror or exc}") from None
    key = None
    try:
        st = os.fstat(fd)
        key = (st.st_dev, st.st_ino, threading.get_ident())
        if key in _HELD:  # waiting would never end: this process holds it (two arguments naming one file)
            key = None
            raise WriteError(f"{str(path)!r} is already locked by this command ({str(lock_path)!r}): is one file "
                             "named twice? nothing was written")
        deadline = time.monotonic() + timeout
        while not _try_lock(fd):
            if time.monotonic() > deadline:
                key = None
                raise WriteError(f"{str(path)!r} stayed locked by another process for {timeout:.0f}s "
                                 f"({str(lock_path)!r}); nothing was written")
            time.sleep(0.05)
        _HELD.add(key)
        yield
    finally:
        _HELD.discard(key)
        os.close(fd)  # closing the descriptor releases the lock


def _try_lock(fd: int) -> bool:
    try:
        if fcntl is not None:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        else:
            msvcrt.locking(fd, msvcrt.LK_NBLCK, 1)
        return True
    except (BlockingIOError, PermissionError):
        return False
    except OSError as exc:
        if exc.errno in (errno.EAGAIN, errno.EACCES, errno.EDEADLK):
            return False
        raise WriteError(f"cannot lock {exc.filename or 'the lock file'}: {exc.strerror or exc}") from None
