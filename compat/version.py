# SPDX-License-Identifier: Apache-2.0
"""The one place that parses and compares megatron-core versions (always with ``packaging.version``)."""
from __future__ import annotations

import os
import re
import sys
from functools import lru_cache
from pathlib import Path

from packaging.version import InvalidVersion, Version

from .errors import UnsupportedVersionError, VersionError, one_line, shown

DISTRIBUTION = "megatron-core"
OLDEST_SUPPORTED = Version("0.7.0")


MAX_VERSION_CHARS = 128  # PEP 440 has no limit; packaging's int() fails past 4300 digits (ValueError, not Invalid)


def _shown(text: str) -> str:
    return shown(text, 60)


def parse(text) -> Version:
    if isinstance(text, Version):
        return text
    return _parse_text(str(text).strip())


@lru_cache(maxsize=512)  # a call compares the same few release strings many times; a Version is immutable
def _parse_text(text: str) -> Version:
    if len(text) > MAX_VERSION_CHARS:
        raise VersionError(f"megatron-core version {_shown(text)} is longer than {MAX_VERSION_CHARS} characters; "
                           "it is not a release version")
    try:
        return Version(text)
    except ValueError:  # InvalidVersion, or an integer conversion packaging does not expect to fail
        raise VersionError(f"megatron-core version {_shown(text)} does not parse as a PEP 440 version") from None


def same(a, b) -> bool:
    """Equal as versions ("0.20" is "0.20.0")."""
    return parse(a) == parse(b)


def at_least(version, minimum) -> bool:
    return parse(version) >= parse(minimum)


def within(version, since=None, until=None) -> bool:
    """Whether ``version`` lies in the range ``since``..``until`` (both inclusive; None: open) of a rule.

    The one meaning of a rule's range: a build is placed by its base release, so a pre-release, dev, post or local
    build of 0.18.0 (0.18.0rc1, 0.18.0.dev0, 0.18.0.post1, 0.18.0+abc) is inside "since 0.18.0" and inside
    "until 0.18.0", as ``match_release`` describes it by 0.18.0's registry entry.
    """
    base = parse(parse(version).base_version)
    return (since is None or base >= parse(since)) and (until is None or base <= parse(until))


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
    for entry in sys.path:
        candidate = Path(entry or ".") / "megatron" / "core" / "package_info.py"
        try:
            found = os.path.lexists(candidate)  # a FIFO or a dangling link there is an error, not a skip
        except (OSError, ValueError):  # an odd sys.path entry (name too long, NUL byte)
            continue
        if found:
            return _read_package_info(candidate)
    return None


def _read_package_info(path: Path) -> str | None:
    """The version a package_info.py declares; a VersionError naming the file when it cannot be read."""
    import ast
    import warnings

    from .bounded_read import MIB, read_file

    data = read_file(path, MIB, "megatron-core package_info.py", error=VersionError)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # invalid escape sequences
            return version_from_package_info(ast.parse(data, filename="package_info.py"))
    except (SyntaxError, ValueError, TypeError, RecursionError, MemoryError) as exc:
        detail = one_line(exc, 200) or type(exc).__name__
        raise VersionError(f"cannot read the megatron-core version from {str(path)!r}: {detail}") from None


def version_from_package_info(tree) -> str | None:
    """MAJOR.MINOR.PATCH + PRE_RELEASE from the parsed module tree of megatron/core/package_info.py."""
    import ast

    values = {}
    for node in tree.body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            try:
                values[node.targets[0].id] = ast.literal_eval(node.value)
            except (ValueError, TypeError, SyntaxError):
                pass
    if not all(k in values for k in ("MAJOR", "MINOR", "PATCH")):
        return None
    return f"{values['MAJOR']}.{values['MINOR']}.{values['PATCH']}{values.get('PRE_RELEASE', '') or ''}"


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
    by_version = _by_version(tuple(known))
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


@lru_cache(maxsize=64)  # the registry's release lists: a handful, matched many times
def _by_version(known: tuple[str, ...]) -> dict[Version, str]:
    return {parse(k): k for k in known}


def newest(versions) -> str:
    return max(versions, key=parse)


def is_newer(a, b) -> bool:
    return parse(a) > parse(b)


def sorted_versions(versions) -> list[str]:
    return sorted(versions, key=parse)


def runs(versions, among) -> list[list[str]]:
    """Contiguous runs of ``versions`` within ``among`` (every known version, sorted): gaps split a run."""
    wanted, out, run = set(versions), [], []
    for v in among:
        if v in wanted:
            run.append(v)
        elif run:
            out.append(run)
            run = []
    if run:
        out.append(run)
    return out
