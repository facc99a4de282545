# SPDX-License-Identifier: Apache-2.0
"""Rules between config classes (data/cross_rules.json), applied when configs are resolved together.

A *side* is one config's view: its effective canonical values, which of them the user set, which fields the target
build has, and whether we may set values on it (a resolved dict can be re-resolved; a built object cannot).
``plan`` returns what each side must additionally be set to and refuses real conflicts with ``ConstraintError``.
"""
from __future__ import annotations

from collections.abc import Callable
from functools import lru_cache

from . import version as _v
from .dtypes import dtype_name, is_torch_dtype
from .errors import ConstraintError
from .registry import cross_rules
from .value_equality import same_value


class Side:
    """``values``: canonical name -> effective value; ``given``: the names whose value the user chose; ``has``:
    whether the target build has a field; ``settable``: False for what the caller built (a needed change becomes a
    warning); ``built``: an object, where every field carries a value, chosen or not (see optimizer_says);
    ``defaults``: the release's defaults (for optimizer_says == "non_default")."""

    __slots__ = ("config", "values", "given", "has", "settable", "built", "defaults")

    def __init__(self, config: str, values: dict, given: set, has: Callable[[str], bool], settable: bool = True,
                 built: bool = False, defaults: dict | None = None):
        # a plain class, not a dataclass: it is on every DDP call's import path, and a dataclass costs ~0.4 ms there
        self.config, self.values, self.given, self.has = config, values, given, has
        self.settable, self.built, self.defaults = settable, built, dict(defaults or {})


def normalize(value):
    """Comparable form: dtypes by name."""
    if is_torch_dtype(value):
        return dtype_name(value)
    return value


def _refs(rule: dict) -> list[dict]:
    return [*rule["when"], rule["then"]] + ([rule["then"]["equals_field"]] if "equals_field" in rule["then"] else [])


@lru_cache(maxsize=8)
def fields_named(config: str) -> frozenset:
    """The fields of ``config`` that some rule reads or sets (all a side needs to carry)."""
    return frozenset(r["field"] for rule in cross_rules()["rules"] for r in _refs(rule) if r["config"] == config)


def _applies(rule: dict, sides: dict, version: str) -> bool:
    if not _v.within(version, rule.get("since"), rule.get("until")):
        return False
    return all(r["config"] in sides and sides[r["config"]].has(r["field"]) for r in _refs(rule))


def _holds(pred: dict, sides: dict) -> bool:
    value = sides[pred["config"]].values.get(pred["field"])
    return {"truthy": bool(value), "falsy": not value, "none": value is None,
            "not_none": value is not None}[pred["is"]]


def _given(side: Side, name: str, says: str) -> bool:
    if name not in side.given:
        return False
    if not side.built or says == "present" or name not in side.defaults:
        return True
    return not same_value(side.values[name], side.defaults[name])  # "non_default" on a built object


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
        if same_value(actual, expected):
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


__all__ = ["Side", "fields_named", "normalize", "plan"]
