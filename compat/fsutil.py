"""Atomic writes: a temp file in the target's directory, fsync, then ``os.replace``. A crash or a full disk leaves
the old file intact, never a truncated one."""
from __future__ import annotations

import os
import tempfile
from pathlib import Path

from .errors import CompatError


class WriteError(CompatError):
    """A file could not be written (the previous content, if any, is left unchanged)."""


def atomic_write_bytes(path, data: bytes) -> None:
    path = Path(path)
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
