# SPDX-License-Identifier: Apache-2.0
"""registry.json as a file (the packaged one, or one given with ``--registry``): a bounded read, strict JSON (no
``NaN``/``Infinity``, no duplicate keys), and a shape check, so a malformed file is one ``RegistryFileError``
naming the place, never a KeyError deep inside the gate. Writes are strict JSON and atomic."""
from __future__ import annotations

import ast
import json
import math
from pathlib import Path

from ... import version as _v
from ...errors import CompatError, VersionError, one_line, shown
from ..archive import MIB, read_file

MAX_REGISTRY_BYTES = 32 * MIB  # the 26 releases take 440 kB
MAX_TEXT = 100_000  # characters in any one string of the registry (a doc, an annotation)


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
                                f"{one_line(exc, 300) or type(exc).__name__}") from None
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
    from ...configs import CONFIGS

    for key, config in CONFIGS.items():
        for f in facts.get(key, {}).get("fields", []):
            where = f"{config.class_name}.{f.get('name')}"
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
            raise ValueError(f"duplicate key {shown(key, 100)}")
        out[key] = value
    return out


# ---------------------------------------------------------------------------------------------- shape
def check_registry(data, where: str) -> None:
    """Raise RegistryFileError unless ``data`` has the shape every registry reader relies on (format 3, see
    ``compat.registry_format``): releases -> one snapshot key per config class; snapshots -> indexes into the interned
    ``fields`` and ``checks`` tables."""
    from ...configs import CONFIGS
    from ...registry_format import FORMAT

    def fail(at: str, why: str):
        raise RegistryFileError(f"registry {where!r}: {at}: {why}")

    if not isinstance(data, dict):
        fail("top level", f"expected an object, got {type(data).__name__}")
    if data.get("format") != FORMAT:
        fail("format", f"expected {FORMAT} (this mcore-compat's registry format), got {shown(data.get('format'), 40)}")
    for key, kind in (("releases", list), ("snapshots", dict), ("fields", list), ("checks", list), ("writes", list)):
        if not isinstance(data.get(key), kind) or (key == "releases" and not data[key]):
            fail(key, f"expected a {'non-empty ' if key == 'releases' else ''}{kind.__name__}")
    for i, record in enumerate(data["fields"]):
        _check_field(record, f"fields[{i}]", fail)
    for i, record in enumerate(data["checks"]):
        if not isinstance(record, dict) or not isinstance(record.get("reads"), list) or \
                not all(isinstance(n, str) for n in record["reads"]):
            fail(f"checks[{i}]", "expected an object with a 'reads' list of field names")
    for key, snap in data["snapshots"].items():
        _check_snapshot(snap, f"snapshots[{shown(key, 80)}]", fail, len(data["fields"]), len(data["checks"]),
                        data["fields"], data["writes"])
    seen = set()
    for i, rel in enumerate(data["releases"]):
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
        configs = rel.get("configs")
        if not isinstance(configs, dict) or "ddp" not in configs:
            fail(f"{at}.configs", "expected an object naming at least the ddp snapshot")
        for config, ref in configs.items():
            if config not in CONFIGS:
                fail(f"{at}.configs", f"unknown config {shown(config, 80)} (known: {', '.join(CONFIGS)})")
            if not isinstance(ref, str) or ref not in data["snapshots"]:
                fail(f"{at}.configs.{config}", "expected the key of an entry of snapshots")
    if all(rel["yanked"] for rel in data["releases"]):
        fail("releases", "every release is yanked; the gate compares with the newest final release")


def _indexes(value, size: int) -> bool:
    return isinstance(value, list) and all(type(i) is int and 0 <= i < size for i in value)


def _check_snapshot(snap, at: str, fail, n_fields: int, n_checks: int, fields: list, writes: list) -> None:
    if not isinstance(snap, dict) or not isinstance(snap.get("class"), str) or \
            not isinstance(snap.get("bases"), list):
        fail(at, "expected an object with 'class' and 'bases'")
    if not _indexes(snap.get("fields"), n_fields):
        fail(f"{at}.fields", f"expected a list of indexes into fields (0..{n_fields - 1})")
    names = [fields[i]["name"] for i in snap["fields"]]
    if len(set(names)) != len(names):
        fail(f"{at}.fields", "a field name is listed twice")
    for key in ("reads", "writes"):
        if not _indexes(snap.get(key), len(names)):
            fail(f"{at}.{key}", "expected a list of positions in the snapshot's fields")
    if not isinstance(snap.get("dynamic_writes"), bool):
        fail(f"{at}.dynamic_writes", "expected true or false")
    effects = snap.get("effects")
    if not isinstance(effects, list) or not all(
            isinstance(e, list) and len(e) == 2 and _indexes(e[:1], len(writes)) and type(e[1]) is int for e in effects):
        fail(f"{at}.effects", f"expected [write index (0..{len(writes) - 1}), line] pairs")
    for i, (w, _line) in enumerate(effects):
        _check_write(writes[w], f"{at}.effects[{i}]", fail, set(names), i)
    enums = snap.get("enums")
    if not isinstance(enums, dict) or not all(
            isinstance(k, str) and isinstance(e, dict) and e.get("mixin") in (None, "str", "int", "float")
            and isinstance(e.get("members"), dict) and isinstance(e.get("aliases"), dict)
            and all(type(x) in (str, int, type(None)) for x in e["members"].values())
            and all(t in e["members"] for t in e["aliases"].values()) for k, e in enums.items()):
        fail(f"{at}.enums", "expected Enum name -> {mixin, members: name -> str, int or null, aliases}")
    checks = snap.get("checks")
    if not isinstance(checks, list) or not all(
            isinstance(c, list) and len(c) == 4 and _indexes(c[:1], n_checks) and type(c[1]) is int
            and _position(c[2], len(effects)) and isinstance(c[3], list)
            and all(_position(p, len(effects)) for p in c[3]) for c in checks):
        fail(f"{at}.checks", f"expected [check index (0..{n_checks - 1}), line, writes before it, "
                             f"writes before each condition] (positions 0..{len(effects)})")


def _is_local(target: str) -> bool:
    parts = target.split(".")
    return len(parts) == 2 and all(p.isidentifier() for p in parts)


def _position(value, n_writes: int) -> bool:
    return type(value) is int and 0 <= value <= n_writes


def _check_write(write, at: str, fail, names: set, index: int) -> None:
    if not isinstance(write, dict):
        fail(at, "expected an object")
    targets = write.get("targets")
    if targets is not None and (not isinstance(targets, list) or not all(
            isinstance(t, str) and (t in names or _is_local(t)) for t in targets)):
        fail(f"{at}.targets", "expected null (any field) or a list of the snapshot's field names and Class.local")
    when, when_at = write.get("when"), write.get("when_at")
    if not isinstance(when, list) or not isinstance(when_at, list) or len(when) != len(when_at) or \
            not all(_position(p, index) for p in when_at):
        fail(f"{at}.when", "expected conditions and, for each, the writes before it (at most this write's own index)")
    for text in [*when, *([write["value"]] if write.get("value") is not None else [])]:
        if not isinstance(text, str) or len(text) > MAX_TEXT:
            fail(at, f"expected expressions of at most {MAX_TEXT} characters")
        try:
            ast.parse(text, mode="eval")
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            fail(at, f"{shown(text, 100)} is not a Python expression")
    if not isinstance(write.get("maybe"), (str, type(None))):
        fail(f"{at}.maybe", "expected a string or null")


def _check_field(f, fat: str, fail) -> None:
    if not isinstance(f, dict):
        fail(fat, f"expected an object, got {type(f).__name__}")
    name = f.get("name")
    if not isinstance(name, str) or not name.isidentifier():
        fail(f"{fat}.name", f"expected a Python identifier, got {shown(name, 100)}")
    for key in ("annotation", "doc", "default_expr"):
        value = f.get(key, "")
        if not isinstance(value, str) or len(value) > MAX_TEXT:
            fail(f"{fat}.{key}", f"expected a string of at most {MAX_TEXT} characters")
    if "annotation" not in f:
        fail(f"{fat}.annotation", "missing")
    try:
        ast.parse(f["annotation"], mode="eval")
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        fail(f"{fat}.annotation", f"{shown(f['annotation'], 100)} is not a Python expression")
    if sum(k in f for k in ("default", "default_expr", "required")) != 1:
        fail(fat, "expected exactly one of 'default', 'default_expr' and 'required'")
