"""Build ``data/registry.json`` from the real release wheels: list, ``pip download --no-deps``, extract with ast."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import urllib.error
import urllib.request
from pathlib import Path

from . import snapshots
from . import version as _v
from .errors import CandidateError
from .extract import extract_candidate

PACKAGE = "megatron-core"
FIRST_WITH_CONFIG = "0.7.0"
DEFAULT_INDEX = "https://pypi.org/simple"
CACHE_DIR = Path(os.environ.get("MCORE_COMPAT_CACHE", Path.home() / ".cache" / "mcore-compat")) / "wheels"


def index_url() -> str:
    return os.environ.get("PIP_INDEX_URL", DEFAULT_INDEX).rstrip("/")


def list_releases(index: str | None = None, timeout: float = 30.0) -> dict[str, bool]:
    """Final releases >= 0.7.0 on the index, mapped to whether they are yanked (PEP 691 JSON)."""
    url = f"{index or index_url()}/{PACKAGE}/"
    request = urllib.request.Request(url, headers={"Accept": "application/vnd.pypi.simple.v1+json"})
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            payload = json.load(response)
    except (urllib.error.URLError, OSError, ValueError) as exc:
        raise CandidateError(f"cannot list {PACKAGE} releases from {url}: {exc}") from None
    yanked: dict[str, bool] = {}
    for file in payload.get("files", []):
        ver = _v.version_from_filename(file["filename"])
        if ver is None:
            continue
        parsed = _v.parse(ver)
        if parsed.is_prerelease or parsed.is_devrelease or parsed < _v.parse(FIRST_WITH_CONFIG):
            continue
        yanked[str(parsed)] = yanked.get(str(parsed), True) and bool(file.get("yanked"))
    return dict(sorted(yanked.items(), key=lambda kv: _v.parse(kv[0])))


def download(version: str, dest: Path = CACHE_DIR, timeout: float = 300.0,
             python_version: str | None = None) -> Path:
    """The wheel for ``version`` (downloaded once into the cache). 0.17+ only ship wheels tagged for Python 3.12.

    ``python_version`` asks pip for wheels of that interpreter (default: 3.12 from 0.17.0 on, else this one).
    """
    dest.mkdir(parents=True, exist_ok=True)
    cached = _find_wheel(dest, version)
    if cached:
        return cached
    cmd = [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:", "-q", "-d", str(dest)]
    python_version = python_version or ("3.12" if _v.at_least(version, "0.17.0") else None)
    if python_version:
        cmd += ["--python-version", python_version]
    try:
        proc = subprocess.run(cmd + [f"{PACKAGE}=={version}"], capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        raise CandidateError(f"pip download of {PACKAGE}=={version} timed out after {timeout:.0f}s") from None
    found = _find_wheel(dest, version)
    if proc.returncode != 0 or found is None:
        tail = (proc.stderr or proc.stdout).strip().splitlines()[-1:] or ["no output"]
        raise CandidateError(f"pip download of {PACKAGE}=={version} failed: {tail[0]}")
    return found


def _find_wheel(dest: Path, version: str) -> Path | None:
    hits = sorted(dest.glob(f"megatron_core-{version}-*.whl"))
    return hits[0] if hits else None


def build_registry(wheels: dict[str, tuple[Path, bool]]) -> dict:
    """``wheels`` maps version -> (wheel path, yanked). The registry format lives in ``compat.snapshots``."""
    releases = []
    for version in sorted(wheels, key=_v.parse):
        path, yanked = wheels[version]
        facts = extract_candidate(path)
        if facts["version"] != version:
            raise CandidateError(f"{path.name} says it is {facts['version']}, expected {version}")
        releases.append(snapshots.release_facts(version, yanked, facts))
    return snapshots.encode(releases)


def add_release(registry: dict, version: str, yanked: bool, facts: dict) -> dict:
    """``registry`` plus one release (replacing an entry of that version), in the deterministic registry form."""
    return snapshots.add_release(registry, version, yanked, facts)


def dumps(registry: dict) -> str:
    return snapshots.dumps(registry)


def refresh(out: Path, versions: dict[str, bool] | None = None, log=print) -> dict:
    """Download and extract every release (or the given ``{version: yanked}``) and write the registry."""
    versions = versions if versions is not None else list_releases()
    wheels = {}
    for version, yanked in versions.items():
        wheels[version] = (download(version), yanked)
        log(f"{version}: {wheels[version][0].name}{' (yanked)' if yanked else ''}")
    registry = build_registry(wheels)
    from .fsutil import atomic_write_text

    atomic_write_text(out, dumps(registry))
    return registry
