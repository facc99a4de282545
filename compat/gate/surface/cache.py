"""Candidate models, built once per wheel and cached as JSON keyed by the wheel's sha256 and the model format.

A cache file is ``<sha256 of the JSON body>\\n<JSON body>``: a truncated, edited or foreign entry fails the digest
or the key check and is rebuilt, never trusted. Writes are atomic (``compat.fsutil``). Source trees (checkouts) are
not cached: they have no stable identity.
"""
from __future__ import annotations

import json
from pathlib import Path

from ... import fetch
from ... import version as _v
from ...archive import MAX_ARCHIVE_BYTES, open_source, read_file
from ...errors import CandidateError, CompatError
from ...extract import PACKAGE_INFO_PATH, sha256, version_from_package_info
from ...fsutil import WriteError, atomic_write_bytes
from .model import MODEL_FORMAT, build_model

MAX_CACHE_BYTES = 64 << 20


def cache_dir() -> Path:
    """Next to the wheel cache: ``$MCORE_COMPAT_CACHE/surface`` (default ``~/.cache/mcore-compat/surface``)."""
    return fetch.cache_dir().parent / "surface"


def _entry_path(key: str) -> Path:
    return cache_dir() / f"{key}.model{MODEL_FORMAT}.json"


def read_cached(key: str) -> dict | None:
    """The cached model for ``key``, or None when absent or not trustworthy."""
    path = _entry_path(key)
    if not path.is_file() or path.is_symlink():
        return None
    try:
        raw = read_file(path, MAX_CACHE_BYTES, "model cache entry")
        digest, _, body = raw.partition(b"\n")
        if digest.decode("ascii", "replace") != sha256(body):
            return None
        model = json.loads(body)
    except (CompatError, ValueError, UnicodeDecodeError):
        return None
    ok = (isinstance(model, dict) and model.get("format") == MODEL_FORMAT and model.get("sha256") == key
          and isinstance(model.get("modules"), dict) and isinstance(model.get("classes"), dict))
    return model if ok else None


def write_cached(key: str, model: dict) -> str | None:
    """Store ``model``; returns why it could not be stored (the gate still runs), or None."""
    body = json.dumps(model, separators=(",", ":"), sort_keys=True).encode("utf-8")
    try:
        cache_dir().mkdir(parents=True, exist_ok=True)
        atomic_write_bytes(_entry_path(key), sha256(body).encode("ascii") + b"\n" + body)
        for stale in cache_dir().glob(f"{key}.model*.json"):  # earlier model formats of the same wheel
            if stale != _entry_path(key):
                stale.unlink()
    except (OSError, WriteError) as exc:
        return str(exc)
    return None


def _version_of(source) -> str | None:
    version = source.metadata().get("Version")
    if version is None:
        info = source.read_relative(PACKAGE_INFO_PATH)
        version = version_from_package_info(info) if info is not None else None
    return version


def _build(path: Path, key: str | None) -> dict:
    try:
        source = open_source(path)
        return build_model(source, sha256=key, version=_version_of(source))
    except CompatError:
        raise
    except Exception as exc:  # an untrusted archive can fail in many ways; none of them deserve a traceback
        raise CandidateError(f"cannot read {path.name}: {type(exc).__name__}: {exc}") from None


def model_for(path) -> dict:
    """The model of a wheel, sdist or checkout at ``path`` (archives: from the cache when it is there)."""
    path = Path(path)
    if path.is_dir() and not path.is_symlink():
        return _build(path, None)
    key = sha256(read_file(path, MAX_ARCHIVE_BYTES, "candidate"))
    model = read_cached(key)
    if model is None:
        model = _build(path, key)
        problem = write_cached(key, model)
        if problem:
            model["cache"] = f"not cached: {problem}"
    return model


def cached_wheels() -> dict[str, Path]:
    """Release wheels already in the wheel cache, by version (nothing is downloaded)."""
    found: dict[str, Path] = {}
    directory = fetch.cache_dir()
    if not directory.is_dir():
        return found
    for wheel in sorted(directory.glob("megatron_core-*.whl")):
        version = _v.version_from_filename(wheel.name)
        if version and not wheel.is_symlink():
            found.setdefault(version, wheel)
    return found


def release_models(versions=None) -> dict[str, dict]:
    """Models of the cached release wheels (all, or those in ``versions``), oldest first. Unreadable ones are
    left out: history is a help for the report, not a verdict."""
    wheels = cached_wheels()
    wanted = [v for v in _v.sorted_versions(wheels) if versions is None or v in versions]
    models = {}
    for version in wanted:
        try:
            models[version] = model_for(wheels[version])
        except CompatError:
            continue
    return models
