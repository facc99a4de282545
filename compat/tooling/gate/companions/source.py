# SPDX-License-Identifier: Apache-2.0
"""A companion release as a project tree the surface gate can scan: its wheel's Python files under its import
roots, written once into the cache (read from the archive with its caps; nothing is imported or executed)."""
from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

from ....errors import CandidateError
from ... import fetch
from ...archive import open_source
from ...fsutil import locked
from .catalog import Companion

TREES = "companion-trees"
MAX_TREE_BYTES = 64 * 1024 * 1024  # the newest Megatron-Bridge wheel unpacks to ~12 MB of Python


def trees_dir() -> Path:
    """``$MCORE_COMPAT_CACHE/companion-trees`` (beside the wheel cache)."""
    return fetch.cache_dir().parent / TREES


def release_files(companion: Companion, timeout: float = 30.0) -> list[str]:
    """The companion's final, non-yanked releases on the index, oldest first."""
    from .... import version as _v

    files = fetch.project_files(companion.package, timeout=timeout)
    yanked: dict[str, bool] = {}
    for f in files:
        parsed = _v.parse(f.version)
        if parsed.is_prerelease or parsed.is_devrelease:
            continue
        yanked[f.version] = yanked.get(f.version, True) and f.yanked
    return _v.sorted_versions(v for v, y in yanked.items() if not y)


def release_tree(companion: Companion, release: str) -> Path:
    """The directory holding ``release``'s Python files (downloaded and unpacked on first use)."""
    target = trees_dir() / f"{companion.package}-{release}"
    if target.is_dir():
        return target
    wheel = fetch.download(companion.package, release)
    target.parent.mkdir(parents=True, exist_ok=True)
    with locked(target.parent / f".{target.name}.lock"):
        if not target.is_dir():
            _unpack(companion, wheel, target)
    return target


def _unpack(companion: Companion, wheel: Path, target: Path) -> None:
    source = open_source(wheel)
    names = [n for root in companion.roots for n in source.python_files(root)]
    if not names:
        raise CandidateError(f"{wheel.name} installs no Python files under {', '.join(companion.roots)}/")
    staging = Path(tempfile.mkdtemp(prefix=f".{target.name}.", dir=target.parent))
    try:
        total = 0
        for name in names:
            data = source.read_relative(name, package=name.split("/")[0])
            if data is None:
                continue
            total += len(data)
            if total > MAX_TREE_BYTES:
                raise CandidateError(f"{wheel.name}: its Python files exceed {MAX_TREE_BYTES} bytes; not read")
            path = staging / name
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(data)
        os.replace(staging, target)  # a reader sees the whole tree or none
    finally:
        if staging.exists():
            shutil.rmtree(staging, ignore_errors=True)


def unpacked_releases(package: str) -> list[str]:
    """The releases of ``package`` whose trees are in the cache, oldest first."""
    from .... import version as _v
    from ....errors import VersionError

    found = []
    directory = trees_dir()
    for tree in directory.glob(f"{package}-*") if directory.is_dir() else ():
        try:
            version = str(_v.parse(tree.name[len(package) + 1:]))
        except VersionError:
            continue
        if tree.is_dir():
            found.append(version)
    return _v.sorted_versions(found)
