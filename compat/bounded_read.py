# SPDX-License-Identifier: Apache-2.0
"""Bounded reads of one regular file: a cap on its size, and no FIFO, device or socket (never blocks on one)."""
from __future__ import annotations

import os
import stat

from .errors import CandidateError, one_line, shown

MIB = 1 << 20
MAX_MEMBER_BYTES = 8 * MIB  # the default cap: the largest megatron .py file is under 1 MB


def _flat(exc: BaseException) -> str:
    return one_line(exc, 300) or type(exc).__name__


def read_file(path, limit: int = MAX_MEMBER_BYTES, what: str = "file", *, follow_symlinks: bool = True,
              error: type[Exception] = CandidateError) -> bytes:
    """A regular file's bytes, refusing anything over ``limit``, a FIFO, a device or a socket (without blocking on
    it), and with ``follow_symlinks=False`` a symlink. Failures raise ``error`` (a CompatError) in one line."""
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0) | getattr(os, "O_BINARY", 0)
    if not follow_symlinks:
        flags |= getattr(os, "O_NOFOLLOW", 0)
    try:
        if not follow_symlinks and os.path.islink(path):
            raise error(f"{what} {shown(path)} is a symlink; it is not followed")
        fd = os.open(path, flags)
    except OSError as exc:
        raise error(f"cannot read {what} {shown(path)}: {exc.strerror or _flat(exc)}") from None
    except ValueError as exc:  # an embedded NUL byte
        raise error(f"cannot read {what} {shown(path)}: {_flat(exc)}") from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            kind = "a directory" if stat.S_ISDIR(st.st_mode) else "a FIFO, device or socket"
            raise error(f"{what} {shown(path)} is not a regular file ({kind}); it is not read")
        if st.st_size > limit:
            raise error(f"{what} {shown(path)} is {st.st_size} bytes, over the {limit}-byte read cap")
        chunks, size = [], 0
        while size <= limit:
            chunk = os.read(fd, min(limit + 1 - size, 1 << 20))
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
    except OSError as exc:
        raise error(f"cannot read {what} {shown(path)}: {exc.strerror or _flat(exc)}") from None
    finally:
        os.close(fd)
    if size > limit:
        raise error(f"{what} {shown(path)} grew past the {limit}-byte read cap while being read")
    return b"".join(chunks)
