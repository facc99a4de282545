# SPDX-License-Identifier: Apache-2.0
"""Rules between config classes (data/cross_rules.json), applied when configs are resolved together.

A *side* is one config's view: its effective canonical values, which of them the user set, which fields the target
build has, and whether we may set values on it (a resolved dict can be re-resolved; a built object cannot).
``plan`` returns what each side must additionally be set to and refuses real conflicts with ``ConstraintError``.
"""
from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from . import version as _v
from .dtypes import dtype_name, is_torch_dtype
from .errors import ConstraintError, FieldTypeError
from .registry import cross_rules

MISSING = object()


@dataclass
class Side:
    config: str
    values: dict  # canonical name -> effective value
    given: set  # names whose value the user chose
    has: Callable[[str], bool]  # whether the target build has the field
    settable: bool = True  # False for what the caller built: a needed change becomes a warning
    built: bool = False  # an object: every field carries a value, chosen or not (see optimizer_says)
    defaults: dict = field(default_factory=dict)  # release defaults (for optimizer_says == "non_default")


def normalize(value):
    """Comparable form: dtypes by name."""
    if is_torch_dtype(value):
        return dtype_name(value)
    return value


def optimizer_get(cfg, name: str, default=None):
    """Read a field from a Megatron OptimizerConfig, a dataclass, a dict or a .get()-style object."""
    if isinstance(cfg, Mapping):
        return cfg.get(name, default)
    if dataclasses.is_dataclass(cfg) or not callable(getattr(cfg, "get", None)):
        return getattr(cfg, name, default)
    value = cfg.get(name, MISSING)
    return getattr(cfg, name, default) if value is MISSING else value


def _get(obj, name: str):
    return optimizer_get(obj, name, MISSING)


def object_side(config: str, obj, names, defaults: dict | None = None) -> Side:
    """A side for a user's object (a built OptimizerConfig, a dict, an OmegaConf node): the release defaults
    (``defaults``) overlaid with every value it carries; only carried values count as chosen."""
    carried = {}
    for name in names:
        value = _get(obj, name)
        if value is not MISSING:
            carried[name] = normalize(value)
    values = {**{k: normalize(v) for k, v in (defaults or {}).items()}, **carried}
    return Side(config, values, set(carried), lambda n: n in values, settable=False,
                built=not isinstance(obj, Mapping), defaults=dict(defaults or {}))


def _applies(rule: dict, sides: dict, version: str) -> bool:
    if "since" in rule and not _v.at_least(_v.parse(version).base_version, rule["since"]):
        return False
    if "until" in rule and _v.is_newer(_v.parse(version).base_version, rule["until"]):
        return False
    refs = [*rule["when"], rule["then"]] + ([rule["then"]["equals_field"]] if "equals_field" in rule["then"] else [])
    return all(r["config"] in sides and sides[r["config"]].has(r["field"]) for r in refs)


def _holds(pred: dict, sides: dict) -> bool:
    value = sides[pred["config"]].values.get(pred["field"])
    return {"truthy": bool(value), "falsy": not value, "none": value is None,
            "not_none": value is not None}[pred["is"]]


def _given(side: Side, name: str, says: str) -> bool:
    if name not in side.given:
        return False
    if not side.built or says == "present" or name not in side.defaults:
        return True
    return normalize(side.values[name]) != normalize(side.defaults[name])  # "non_default" on a built object


def plan(sides: dict, version: str) -> tuple[dict, list[str]]:
    """({config: {field: (value, rule id)}}, warnings) that the cross rules require; raises on conflicts."""
    sets: dict[str, dict] = {k: {} for k in sides}
    notes: list[str] = []
    for rule in cross_rules()["rules"]:
        if not _applies(rule, sides, version) or not all(_holds(p, sides) for p in rule["when"]):
            continue
        says = rule.get("optimizer_says", "present")
        then = rule["then"]
        target, name = sides[then["config"]], then["field"]
        ref = then.get("equals_field")
        source = sides[ref["config"]] if ref else None
        expected = normalize(source.values.get(ref["field"]) if ref else then["equals"])
        actual = normalize(target.values.get(name))
        label = f"{then['config']}.{name}"
        involved = {f"{p['config']}.{p['field']}": sides[p["config"]].values.get(p["field"]) for p in rule["when"]}
        involved[label] = actual
        if ref:
            involved[f"{ref['config']}.{ref['field']}"] = expected
        if actual == expected:
            continue
        target_given = _given(target, name, says)
        source_given = ref is not None and _given(source, ref["field"], says)
        if rule["kind"] == "check" or (target_given and (rule["kind"] == "follow" or source_given)):
            raise ConstraintError(rule["id"], rule["message"], involved, version)
        if rule["kind"] == "equal" and target_given:  # the user chose the target side: the other side follows
            _set(source, ref["field"], target.values[name], rule, sets, notes, label)
        elif rule["kind"] == "follow" or source_given:
            _set(target, name, expected, rule, sets, notes, f"{ref['config']}.{ref['field']}" if ref else "")
    return sets, notes


def _set(side: Side, name: str, value, rule: dict, sets: dict, notes: list, because: str) -> None:
    if side.settable:
        sets[side.config][name] = (value, f"{rule['id']}: {rule['message']}")
        side.values[name] = value
        return
    notes.append(f"{side.config}.{name} should be {value!r} to match {because or 'the rule'} "
                 f"({rule['id']}); the object given cannot be changed here: set it where it is built")


def check_optimizer_config(optimizer_config) -> None:
    """The optimizer config must be None, a mapping, a dataclass or an object with attributes (not a scalar)."""
    if optimizer_config is None or isinstance(optimizer_config, Mapping):
        return
    if isinstance(optimizer_config, (str, bytes, int, float, bool, list, tuple, set)):
        raise FieldTypeError("optimizer_config", optimizer_config,
                             "an OptimizerConfig, a dataclass, a mapping of OptimizerConfig fields, or None")


__all__ = ["MISSING", "Side", "check_optimizer_config", "normalize", "object_side", "plan"]
