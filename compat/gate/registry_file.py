"""registry.json as a file (the packaged one, or one given with ``--registry``): a bounded read, strict JSON (no
``NaN``/``Infinity``, no duplicate keys), and a shape check, so a malformed file is one ``RegistryFileError``
naming the place, never a KeyError deep inside the gate. Writes are strict JSON and atomic."""
from __future__ import annotations

import ast
import json
import math
from pathlib import Path

from .. import version as _v
from ..archive import MIB, read_file
from ..errors import CompatError, VersionError

MAX_REGISTRY_BYTES = 32 * MIB  # the 26 releases take 130 kB
MAX_TEXT = 100_000  # characters in any one string of the registry (a doc, an annotation)
_SNAPSHOTS = ("ddp_snapshots", "optimizer_snapshots")


class RegistryFileError(CompatError):
    """A registry file that cannot be read, is not strict JSON, or does not have the registry's shape."""


def read_registry(path) -> tuple[dict, bytes]:
    """(data, raw bytes) of a registry file; ``RegistryFileError`` naming the file and the bad entry."""
    path = Path(path)
    raw = read_file(path, MAX_REGISTRY_BYTES, "registry", error=RegistryFileError)
    try:
        data = json.loads(raw.decode("utf-8"), parse_constant=_no_constant, object_pairs_hook=_unique_keys)
    except (UnicodeDecodeError, ValueError, RecursionError) as exc:
        raise RegistryFileError(f"registry {str(path)!r} is not valid JSON: "
                                f"{' '.join(str(exc).split())[:300] or type(exc).__name__}") from None
    check_registry(data, str(path))
    return data, raw


def dumps_registry(data: dict, where: str = "registry") -> str:
    """The registry's canonical text (``refresh.dumps``), refusing what strict JSON cannot hold."""
    from .. import refresh

    try:
        return refresh.dumps(data)
    except ValueError as exc:  # allow_nan=False
        raise RegistryFileError(f"{where}: {exc}") from None


def unwritable(facts: dict) -> list[str]:
    """What in extracted facts strict UTF-8 JSON cannot hold, as 'Config.field: why' (a default of inf or nan, a
    lone surrogate from a '\\ud800' escape in a default or a doc)."""
    bad = []
    for key, config in (("ddp", "DistributedDataParallelConfig"), ("optimizer", "OptimizerConfig")):
        for f in facts.get(key, {}).get("fields", []):
            where = f"{config}.{f.get('name')}"
            if _has(f.get("default"), _non_finite):
                bad.append(f"{where}: non-finite default {f.get('default')!r}")
            for part in ("default", "default_expr", "doc", "annotation"):
                if _has(f.get(part), _not_utf8):
                    bad.append(f"{where}: its {part} holds a lone surrogate, which UTF-8 cannot encode")
    return bad


def _non_finite(value) -> bool:
    return isinstance(value, float) and not math.isfinite(value)


def _not_utf8(value) -> bool:
    if not isinstance(value, str):
        return False
    try:
        value.encode("utf-8")
        return False
    except UnicodeEncodeError:
        return True


def _has(value, test) -> bool:
    if isinstance(value, (list, tuple)):
        return any(_has(v, test) for v in value)
    if isinstance(value, dict):
        return any(_has(k, test) or _has(v, test) for k, v in value.items())
    return test(value)


def _no_constant(name: str):
    raise ValueError(f"{name} is not JSON (a non-finite number)")


def _unique_keys(pairs):
    out = {}
    for key, value in pairs:
        if key in out:
            raise ValueError(f"duplicate key {key[:100]!r}")
        out[key] = value
    return out


# ---------------------------------------------------------------------------------------------- shape
def check_registry(data, where: str) -> None:
    """Raise RegistryFileError unless ``data`` has the shape every registry reader relies on."""
    def fail(at: str, why: str):
        raise RegistryFileError(f"registry {where!r}: {at}: {why}")

    if not isinstance(data, dict):
        fail("top level", f"expected an object, got {type(data).__name__}")
    releases = data.get("releases")
    if not isinstance(releases, list) or not releases:
        fail("releases", "expected a non-empty list")
    for key in _SNAPSHOTS:
        if not isinstance(data.get(key), dict):
            fail(key, "expected an object of snapshots keyed by sha256")
        for sha, snap in data[key].items():
            _check_snapshot(snap, f"{key}[{sha[:80]!r}]", fail)
    seen = set()
    for i, rel in enumerate(releases):
        at = f"releases[{i}]"
        if not isinstance(rel, dict):
            fail(at, f"expected an object, got {type(rel).__name__}")
        version = rel.get("version")
        if not isinstance(version, str):
            fail(f"{at}.version", "expected a version string")
        try:
            parsed = _v.parse(version)
        except VersionError as exc:
            fail(f"{at}.version", str(exc))
        if parsed in seen:
            fail(f"{at}.version", f"{version} is listed twice")
        seen.add(parsed)
        if not isinstance(rel.get("yanked"), bool):
            fail(f"{at}.yanked", "expected true or false")
        if not isinstance(rel.get("requires_python"), (str, type(None))):
            fail(f"{at}.requires_python", "expected a string or null")
        for ref, key in (("ddp", "ddp_snapshots"), ("optimizer", "optimizer_snapshots")):
            if not isinstance(rel.get(ref), str) or rel[ref] not in data[key]:
                fail(f"{at}.{ref}", f"expected the key of an entry of {key}")
    if all(rel["yanked"] for rel in releases):
        fail("releases", "every release is yanked; the gate compares with the newest final release")


def _check_snapshot(snap, at: str, fail) -> None:
    if not isinstance(snap, dict) or not isinstance(snap.get("fields"), list):
        fail(at, "expected an object with a 'fields' list")
    for key in ("post_init_reads", "post_init_writes"):
        if not isinstance(snap.get(key), list) or not all(isinstance(n, str) for n in snap[key]):
            fail(f"{at}.{key}", "expected a list of field names")
    names = set()
    for i, f in enumerate(snap["fields"]):
        fat = f"{at}.fields[{i}]"
        if not isinstance(f, dict):
            fail(fat, f"expected an object, got {type(f).__name__}")
        name = f.get("name")
        if not isinstance(name, str) or not name.isidentifier():
            fail(f"{fat}.name", f"expected a Python identifier, got {str(name)[:100]!r}")
        if name in names:
            fail(f"{fat}.name", f"{name} is listed twice")
        names.add(name)
        for key in ("annotation", "doc", "default_expr"):
            value = f.get(key, "")
            if not isinstance(value, str) or len(value) > MAX_TEXT:
                fail(f"{fat}.{key}", f"expected a string of at most {MAX_TEXT} characters")
        if "annotation" not in f:
            fail(f"{fat}.annotation", "missing")
        try:
            ast.parse(f["annotation"], mode="eval")
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            fail(f"{fat}.annotation", f"{f['annotation'][:100]!r} is not a Python expression")
        if sum(k in f for k in ("default", "default_expr", "required")) != 1:
            fail(fat, "expected exactly one of 'default', 'default_expr' and 'required'")
