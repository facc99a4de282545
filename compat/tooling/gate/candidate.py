# SPDX-License-Identifier: Apache-2.0
"""Find and read a gate candidate: a release spec (downloaded), ``latest``, a wheel, an sdist or a checkout."""
from __future__ import annotations

import errno
import os
import re
from pathlib import Path

from ... import version as _v
from ...errors import CandidateError, CompatError, VersionError, one_line, shown
from ..extract import extract_candidate

_NOT_A_PATH = {errno.ENAMETOOLONG, errno.ENOTDIR, errno.ELOOP, errno.EILSEQ}
_SPEC = re.compile(r"^\s*megatron[-_.]core\s*==\s*(\S+)\s*$", re.IGNORECASE)
BARE_VERSION = re.compile(r"^\s*v?\d+(\.\d+)*([.-]?(a|b|rc|post|dev)\d*)*\s*$", re.IGNORECASE)


class GateUsageError(Exception):
    """Bad arguments (exit 2)."""


def _local_path(candidate: str) -> Path | None:
    """CANDIDATE as an existing path (a symlink counts: archive.py refuses what it cannot read), else None."""
    try:
        path = Path(candidate).expanduser()
        os.lstat(path)
    except FileNotFoundError:
        return None
    except (OSError, ValueError, RuntimeError) as exc:  # name too long, NUL byte, unknown ~user, no permission
        if not isinstance(exc, OSError) or exc.errno in _NOT_A_PATH:
            return None
        raise CandidateError(f"cannot read candidate {candidate!r}: {getattr(exc, 'strerror', None) or exc}"
                             ) from None
    return path


def locate(candidate: str, dest: Path | None = None) -> tuple[Path, bool | None]:
    """A local wheel/sdist/tree for CANDIDATE (downloading a release spec). Returns (path, yanked or None).

    The keywords win over a file of the same name: ``latest`` and ``megatron-core==X`` are never read as paths
    (write ``./latest`` for a directory named latest). A bare version (``0.19.2``) that is not an existing path
    means that release, as with ``--project``."""
    spec = _SPEC.match(candidate)
    keyword = candidate.strip().lower() == "latest"
    path = None if (spec or keyword) else _local_path(candidate)
    if path is not None:
        return path, False
    if not keyword and not spec and BARE_VERSION.match(candidate):  # `gate 0.19.2`: that release (no such path)
        spec = _SPEC.match(f"megatron-core=={candidate.strip().lstrip('vV')}")
    if keyword:
        from .. import refresh  # the downloader (~50 ms of http, email, ssl imports): only a release from the index

        releases = refresh.list_releases()
        finals = [v for v, yanked in releases.items() if not yanked]
        if not finals:
            raise CandidateError(f"the index lists no final {refresh.PACKAGE} release")
        return fetch_release(_v.newest(finals), dest), False
    if spec:
        try:
            version = str(_v.parse(spec.group(1)))
        except VersionError as exc:
            raise GateUsageError(str(exc)) from None
        return fetch_release(version, dest), None  # yanked: unknown until --accept asks the index
    if any(op in candidate for op in ("<", ">", "~=", "!=")):
        raise GateUsageError(f"{candidate!r}: pin one release with megatron-core==VERSION, or use latest")
    raise CandidateError(f"candidate {shown(candidate)} does not exist (expected megatron-core==VERSION, VERSION, "
                         "latest, a wheel, an sdist or a Megatron-LM checkout)")


def fetch_release(version: str, dest: Path | None = None) -> Path:
    """The release's wheel (any platform; else its sdist) from the index, through the download cache."""
    from .. import refresh

    return refresh.download(version, dest)


def read_candidate(path: Path) -> dict:
    """extract_candidate, with any failure on a malformed archive turned into a one-line CandidateError."""
    try:
        return extract_candidate(path)
    except CandidateError as exc:
        if "\n" not in str(exc):
            raise
        raise CandidateError(one_line(exc)) from None  # one line, e.g. tarfile's per-method list
    except CompatError:
        raise
    except Exception as exc:  # an untrusted archive can fail in many ways; none of them deserve a traceback
        raise CandidateError(f"cannot read {path.name}: {type(exc).__name__}: {exc}") from None
