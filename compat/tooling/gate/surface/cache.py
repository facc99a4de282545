# SPDX-License-Identifier: Apache-2.0
"""Candidate models, built once per wheel and cached as JSON keyed by the wheel's sha256 and the model format.

A cache file is ``<HMAC-SHA256>\n<JSON body>``. The HMAC is keyed by a secret of this account (``cache_key_path``,
made once with mode 0600, kept outside the cache directory) over the wheel's sha256, the model format and the body:
an entry that is truncated, edited (even with a recomputed plain digest), made for another wheel or format, or
written by anyone without the secret (a cache copied, restored or shared from elsewhere) fails the check and is
rebuilt, never trusted. Without a usable secret nothing is read from or written to the cache. It does not protect
against code running as this account, which can read the secret. Writes are atomic (``compat.tooling.fsutil``). Source
trees (checkouts) are not cached: they have no stable identity.
"""
from __future__ import annotations

import hashlib
import hmac
import json
import os
import re
import secrets
import stat
from pathlib import Path

from ... import fetch
from .... import version as _v
from ...archive import MAX_ARCHIVE_BYTES, open_source, read_file
from ....errors import CandidateError, CompatError
from ...extract import PACKAGE_INFO_PATH, sha256
from ...pysource import parse_source
from ....version import version_from_package_info
from ...fsutil import WriteError, atomic_write_bytes
from .model import MODEL_FORMAT, build_model

MAX_CACHE_BYTES = 64 << 20
_KEY_TEXT = re.compile(rb"[0-9a-f]{64}")


def cache_dir() -> Path:
    """Next to the wheel cache: ``$MCORE_COMPAT_CACHE/surface`` (default ``~/.cache/mcore-compat/surface``)."""
    return fetch.cache_dir().parent / "surface"


def cache_key_path() -> Path:
    """``$MCORE_COMPAT_STATE/surface-cache.key`` (default ``~/.local/state/mcore-compat/surface-cache.key``): not
    under the cache directory, so that a copied or restored cache does not bring its own key."""
    root = os.environ.get("MCORE_COMPAT_STATE") or Path.home() / ".local" / "state" / "mcore-compat"
    return Path(root) / "surface-cache.key"


def cache_key() -> tuple[bytes | None, str]:
    """(this account's secret, "") or (None, why there is none): made on first use, refused when it is not a
    regular file of ours that only we can read."""
    path = cache_key_path()
    if not os.path.lexists(path):
        problem = _make_key(path)
        if problem:
            return None, problem
    try:
        st = os.lstat(path)
        if not stat.S_ISREG(st.st_mode):
            return None, f"cache key {path} is not a regular file"
        if st.st_mode & 0o077 or (hasattr(os, "getuid") and st.st_uid != os.getuid()):
            return None, f"cache key {path} is readable or owned by others (chmod 600 it, or remove it)"
        text = read_file(path, 256, "cache key", follow_symlinks=False)
    except (OSError, CompatError) as exc:
        return None, str(exc)
    if not _KEY_TEXT.fullmatch(text.strip()):
        return None, f"cache key {path} is not 64 hex digits (remove it to make a new one)"
    return text.strip(), ""


def _make_key(path: Path) -> str:
    """Create the key atomically (link of a complete temp file: a concurrent reader never sees it half written)."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{secrets.token_hex(4)}")
    try:
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "wb") as out:
            out.write(secrets.token_hex(32).encode("ascii") + b"\n")
        try:
            os.link(tmp, path)
        except FileExistsError:
            pass  # another process made it first: use theirs
    except OSError as exc:
        return f"cannot make cache key {path}: {exc.strerror or exc}"
    finally:
        if os.path.lexists(tmp):
            os.unlink(tmp)
    return ""


def _entry_path(key: str) -> Path:
    return cache_dir() / f"{key}.model{MODEL_FORMAT}.json"


def _mac(secret: bytes, key: str, body: bytes) -> str:
    return hmac.new(secret, f"{key}\n{MODEL_FORMAT}\n".encode("ascii") + body, hashlib.sha256).hexdigest()


def read_cached(key: str) -> dict | None:
    """The cached model for ``key`` (a wheel's sha256), or None when absent or not trustworthy."""
    secret, _problem = cache_key()
    path = _entry_path(key)
    if secret is None or not path.is_file() or path.is_symlink():
        return None
    try:
        raw = read_file(path, MAX_CACHE_BYTES, "model cache entry", follow_symlinks=False)
        digest, _, body = raw.partition(b"\n")
        if not hmac.compare_digest(digest, _mac(secret, key, body).encode("ascii")):
            return None
        model = json.loads(body)
    except (CompatError, ValueError, UnicodeDecodeError):
        return None
    ok = (isinstance(model, dict) and model.get("format") == MODEL_FORMAT and model.get("sha256") == key
          and isinstance(model.get("modules"), dict) and isinstance(model.get("classes"), dict))
    return model if ok else None


def write_cached(key: str, model: dict) -> str | None:
    """Store ``model``; returns why it could not be stored (the gate still runs), or None."""
    secret, problem = cache_key()
    if secret is None:
        return problem
    body = json.dumps(model, separators=(",", ":"), sort_keys=True).encode("utf-8")
    try:
        cache_dir().mkdir(parents=True, exist_ok=True)
        atomic_write_bytes(_entry_path(key), _mac(secret, key, body).encode("ascii") + b"\n" + body)
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
        version = version_from_package_info(parse_source(info, PACKAGE_INFO_PATH)) if info is not None else None
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
