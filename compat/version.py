"""The one place that parses and compares megatron-core versions (always with ``packaging.version``)."""
from __future__ import annotations

import re
import sys
from pathlib import Path

from packaging.version import InvalidVersion, Version

from .errors import UnsupportedVersionError, VersionError

DISTRIBUTION = "megatron-core"
OLDEST_SUPPORTED = Version("0.7.0")


def parse(text) -> Version:
    if isinstance(text, Version):
        return text
    try:
        return Version(str(text).strip())
    except InvalidVersion:
        raise VersionError(f"megatron-core version {text!r} does not parse as a PEP 440 version") from None


def same(a, b) -> bool:
    """Equal as versions ("0.20" is "0.20.0")."""
    return parse(a) == parse(b)


def at_least(version, minimum) -> bool:
    return parse(version) >= parse(minimum)


def version_from_filename(filename: str) -> str | None:
    """The version in a wheel or sdist file name of megatron-core, or None."""
    m = re.match(r"megatron[_-]core-([^-]+?)(?:-.*\.whl|\.tar\.gz|\.zip)$", filename)
    if not m:
        return None
    try:
        return str(Version(m.group(1)))
    except InvalidVersion:
        return None


def _version_from_source_tree() -> str | None:
    """A source checkout without dist metadata: read megatron/core/package_info.py without importing it."""
    module = sys.modules.get("megatron.core.package_info")
    if module is not None and getattr(module, "__version__", None):
        return module.__version__
    from .extract import version_from_package_info

    for entry in sys.path:
        candidate = Path(entry or ".") / "megatron" / "core" / "package_info.py"
        if candidate.is_file():
            return version_from_package_info(candidate.read_bytes())
    return None


def installed_version() -> str | None:
    """The installed megatron-core version, from its distribution metadata or its package_info.py."""
    import importlib.metadata  # ~10 ms: only callers that ask for the installed build pay it

    try:
        return importlib.metadata.version(DISTRIBUTION)
    except importlib.metadata.PackageNotFoundError:
        return _version_from_source_tree()


def match_release(version, known: list[str]) -> tuple[str, str]:
    """Pick the registry release that describes ``version``. Returns (release, how).

    how is one of: ``exact``, ``local`` (a +local build of a known release), ``base`` (an rc/dev/post build
    whose base release is known), ``older-base`` (an rc/dev of an unknown release: the newest known before it),
    ``newer`` (newer than every known release: the newest known).
    """
    v = parse(version)
    if v.release < OLDEST_SUPPORTED.release:
        raise UnsupportedVersionError(
            f"megatron-core {v} predates DistributedDataParallelConfig, which exists from {OLDEST_SUPPORTED} on")
    by_version = {parse(k): k for k in known}
    if v in by_version:
        return by_version[v], "exact"
    public = parse(v.public)
    if public in by_version:
        return by_version[public], "local"
    base = parse(v.base_version)
    if base in by_version and (v.is_prerelease or v.is_devrelease or v.is_postrelease):
        return by_version[base], "base"
    newest = max(by_version)
    if base > newest:
        return by_version[newest], "newer"
    older = [k for k in by_version if k <= base]
    if not older:
        raise UnsupportedVersionError(f"megatron-core {v} is older than every known release")
    return by_version[max(older)], "older-base"


def newest(versions) -> str:
    return max(versions, key=parse)


def is_newer(a, b) -> bool:
    return parse(a) > parse(b)


def sorted_versions(versions) -> list[str]:
    return sorted(versions, key=parse)
