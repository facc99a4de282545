# SPDX-License-Identifier: Apache-2.0
"""Candidate models, built module by module as a run reads them (``lazy_model``) and cached per wheel as JSON keyed
by the wheel's sha256 and the model format: what one run built, the next reads instead of parsing again.

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
import weakref
from pathlib import Path

from .... import version as _v
from ....errors import CandidateError, CompatError
from ....version import version_from_package_info
from ... import fetch
from ...archive import MAX_ARCHIVE_BYTES, open_source, read_file
from ...extract import PACKAGE_INFO_PATH, sha256
from ...fsutil import WriteError, atomic_write_bytes
from ...pysource import parse_source
from .lazy_model import LAZY, LazyModel
from .model import MODEL_FORMAT, build_model

MAX_CACHE_BYTES = 64 << 20
# The models of archives this process holds, by cache entry: one per wheel, however many roles it plays in a run
# (candidate, --against, history), so that a module is parsed once and ``save_models`` stores each wheel once.
_LIVE: weakref.WeakValueDictionary = weakref.WeakValueDictionary()
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


def _format_of(name: str, key: str) -> int:
    """The model format an entry's file name says (``KEY.modelN.json``); unreadable names count as current."""
    middle = name[len(key) + len(".model"):-len(".json")]
    return int(middle) if middle.isdigit() else MODEL_FORMAT


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
          and model.get(LAZY) == 1)
    return model if ok else None


def write_cached(key: str, model: LazyModel) -> str | None:
    """Store what ``model`` built so far; returns why it could not be stored (the gate still runs), or None."""
    secret, problem = cache_key()
    if secret is None:
        return problem
    stored = read_cached(key)  # another process's save since this one read the entry: keep what it built too
    if stored is not None:
        model.absorb(stored)
    body = json.dumps(model.state(), separators=(",", ":"), sort_keys=True).encode("utf-8")
    try:
        cache_dir().mkdir(parents=True, exist_ok=True)
        atomic_write_bytes(_entry_path(key), _mac(secret, key, body).encode("ascii") + b"\n" + body)
        for stale in cache_dir().glob(f"{key}.model*.json"):  # earlier model formats of the same wheel
            if _format_of(stale.name, key) < MODEL_FORMAT:  # a newer one is another checkout's, sharing the cache
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


def _opener(path: Path, key: str):
    """Opens the archive for a model's later reads, refusing it when it is no longer the wheel of ``key``."""
    def reopen():
        if sha256(read_file(path, MAX_ARCHIVE_BYTES, "candidate")) != key:
            raise CandidateError(f"{path.name} changed while the gate was reading it")
        return open_source(path)
    return reopen


def _plan(path: Path, key: str) -> LazyModel:
    try:
        source = open_source(path)
        return LazyModel.plan(source, sha256=key, version=_version_of(source), open_source=_opener(path, key))
    except CompatError:
        raise
    except Exception as exc:  # as _build
        raise CandidateError(f"cannot read {path.name}: {type(exc).__name__}: {exc}") from None


def _cached_lazy(path: Path, key: str) -> LazyModel | None:
    model = _LIVE.get(_entry_path(key))
    if model is None:
        state = read_cached(key)
        model = LazyModel.from_state(state, _opener(path, key)) if state is not None else None
        if model is not None:
            _LIVE[_entry_path(key)] = model
    return model


def model_for(path) -> dict:
    """The model of a wheel, sdist or checkout at ``path``: archives lazily (``lazy_model``), from the cache when
    it is there; a checkout whole."""
    path = Path(path)
    if path.is_dir() and not path.is_symlink():
        return _build(path, None)
    key = sha256(read_file(path, MAX_ARCHIVE_BYTES, "candidate"))
    model = _cached_lazy(path, key)
    if model is None:
        model = _plan(path, key)
        problem = write_cached(key, model)  # stored at once: the release counts as modelled for the history column
        if problem:
            model["cache"] = f"not cached: {problem}"
        else:  # a model not stored is not kept either: the next call says again why
            _LIVE[_entry_path(key)] = model
    return model


def save_models() -> None:
    """Store what this process's models built since they were read (the next run parses none of it again)."""
    for model in list(_LIVE.values()):
        if model.changed and not model.get("cache"):
            model.changed = False
            problem = write_cached(model["sha256"], model)
            if problem:
                model["cache"] = f"not cached: {problem}"


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


def cached_model(path) -> dict | None:
    """The model of the archive at ``path`` when one is cached already (nothing is built)."""
    try:
        return _cached_lazy(Path(path), sha256(read_file(Path(path), MAX_ARCHIVE_BYTES, "candidate")))
    except CompatError:
        return None


def shipped_modules() -> set[str]:
    """Every module some cached release wheel ships, from the archives' file lists (no file is parsed): whether
    a module is "not shipped in the wheel" does not depend on which releases were modelled so far."""
    from .model import module_name

    shipped: set[str] = set()
    for path in cached_wheels().values():
        try:
            names = open_source(path).names()
        except Exception:  # noqa: BLE001 - an unreadable wheel only leaves its modules out of a help text
            continue
        for name in names:
            if name.startswith("megatron/") and name.endswith(".py"):
                module = module_name(name)[0]
                while module:
                    shipped.add(module)
                    module = module.rpartition(".")[0]
    return shipped


def release_models(versions=None, *, modelled_only: bool = False) -> dict[str, dict]:
    """Models of the cached release wheels (all, or those in ``versions``), oldest first. Unreadable ones are
    left out: history is a help for the report, not a verdict. ``modelled_only``: only wheels whose model is
    cached already (a first run does not parse every wheel for the history column)."""
    wheels = cached_wheels()
    wanted = [v for v in _v.sorted_versions(wheels) if versions is None or v in versions]
    models = {}
    for version in wanted:
        try:
            model = cached_model(wheels[version]) if modelled_only else model_for(wheels[version])
        except CompatError:
            continue
        if model is not None:
            models[version] = model
    return models
