# SPDX-License-Identifier: Apache-2.0
"""Build ``data/registry.json`` from the real release files: list the index, download (``compat.tooling.fetch``), extract with ast."""
from __future__ import annotations

from pathlib import Path

from .. import registry_format
from .. import version as _v
from ..errors import CandidateError
from . import fetch
from .extract import extract_candidate
from .fsutil import atomic_write_text

PACKAGE = "megatron-core"
FIRST_WITH_CONFIG = "0.7.0"
DEFAULT_INDEX = fetch.DEFAULT_INDEX
index_url = fetch.index_url


def list_releases(index: str | None = None, timeout: float = 30.0) -> dict[str, bool]:
    """Final releases >= 0.7.0 on the index, mapped to whether they are yanked (every file yanked)."""
    yanked: dict[str, bool] = {}
    for file in fetch.project_files(PACKAGE, index, timeout=timeout):
        parsed = _v.parse(file.version)
        if parsed.is_prerelease or parsed.is_devrelease or not _v.at_least(parsed, FIRST_WITH_CONFIG):
            continue
        yanked[file.version] = yanked.get(file.version, True) and file.yanked
    return dict(sorted(yanked.items(), key=lambda kv: _v.parse(kv[0])))


def download(version: str, dest: Path | None = None, timeout: float = 300.0) -> Path:
    """A wheel (else the sdist) of ``version`` in ``dest`` (default: the cache, ``compat.tooling.fetch.cache_dir()``),
    downloaded once, sha256-checked. Any platform's wheel will do: the config files are pure Python."""
    return fetch.download(PACKAGE, version, dest, timeout=timeout)


def build_registry(wheels: dict[str, tuple[Path, bool]]) -> dict:
    """``wheels`` maps version -> (wheel path, yanked). The registry format lives in ``compat.registry_format``."""
    releases = []
    for version in sorted(wheels, key=_v.parse):
        path, yanked = wheels[version]
        facts = extract_candidate(path)
        if facts["version"] != version:
            raise CandidateError(f"{path.name} says it is {facts['version']}, expected {version}")
        releases.append(registry_format.release_facts(version, yanked, facts))
    return registry_format.encode(releases)


def add_release(registry: dict, version: str, yanked: bool, facts: dict) -> dict:
    """``registry`` plus one release (replacing an entry of that version), in the deterministic registry form."""
    return registry_format.add_release(registry, version, yanked, facts)


def dumps(registry: dict) -> str:
    return registry_format.dumps(registry)


def refresh(out: Path, versions: dict[str, bool] | None = None, log=print) -> dict:
    """Download and extract every release (or the given ``{version: yanked}``) and write the registry."""
    versions = versions if versions is not None else list_releases()
    wheels = {}
    for version, yanked in versions.items():
        wheels[version] = (download(version), yanked)
        log(f"{version}: {wheels[version][0].name}{' (yanked)' if yanked else ''}")
    registry = build_registry(wheels)
    atomic_write_text(out, dumps(registry))
    return registry
