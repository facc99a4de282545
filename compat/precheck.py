# SPDX-License-Identifier: Apache-2.0
"""Pre-check a config against the ``__post_init__`` checks extracted from its class (``Schema.checks``).

The effective config is the target's defaults plus the kwargs that will be passed. A check fires only when every
condition evaluates to True (and, for an assert, its test to False) with known values: a check marked ``skip``, a
value we do not know (a default kept as an expression) or an operation the evaluator refuses means "not checked",
never "refused". Asserts are not checked when Python runs with -O (Megatron's asserts would not run either).

The curated checks of rules.json (owner ``rules.json``) have the same shape and go through the same ``fires`` and
``holds``; they may also call ``CURATED_FUNCTIONS`` (the environment) and carry a release range (``applies``).
"""
from __future__ import annotations

import os
import sys

from . import version as _v
from .annotations import type_of
from .errors import CompatError, ConstraintError
from .evaluate import UNKNOWN, Dtype, Work, evaluate, render, truth
from .registry import Check, Schema

CURATED = "rules.json"  # the owner of a curated check


def _env_items(name: object) -> tuple[str, ...] | object:
    """The comma-separated items of environment variable ``name``, split as Megatron splits them (unset: ("",))."""
    return tuple(os.environ.get(name, "").split(",")) if isinstance(name, str) else UNKNOWN


def _is_torch_min_version(minimum: object) -> bool | object:
    """Whether the installed torch is at least ``minimum`` (Megatron's helper of that name); unknown without torch."""
    import importlib.metadata  # ~30 ms (email, zipfile, ...): paid only by a curated check that asks

    try:
        return _v.at_least(importlib.metadata.version("torch"), minimum)
    except (importlib.metadata.PackageNotFoundError, CompatError):
        return UNKNOWN


# What curated checks (rules.json) may call beyond the extracted checks' language: they read the environment.
CURATED_FUNCTIONS = {"env_items": _env_items, "is_torch_min_version": _is_torch_min_version}


def applies(check: Check, schema: Schema) -> bool:
    """A curated check applies to a build in its release range whose __post_init__ reads all it reads."""
    return set(check.reads) <= schema.post_init_reads and _v.within(schema.version, check.since, check.until)


def holds(check: Check, env: dict, work: Work | None = None) -> bool | None:
    """Whether every condition of ``check.when`` is True (None: one is unknown)."""
    work = work or Work()
    for cond in check.when:
        t = truth(evaluate(cond, env, work, CURATED_FUNCTIONS if check.owner == CURATED else None))
        if t is UNKNOWN:
            return None
        if not t:
            return False
    return True


def environment(schema: Schema, kwargs: dict, overrides: dict | None = None) -> dict:
    """Field -> value as ``__post_init__`` would first see it (dtypes as ``Dtype``; unknown defaults UNKNOWN)."""
    env = {}
    for f in schema.fields:
        env[f.name] = f.default if f.exact and not f.required else UNKNOWN
    env.update(kwargs)
    env.update(overrides or {})
    for f in schema.fields:
        value = env[f.name]
        if isinstance(value, str) and "dtype" in type_of(f.annotation).kinds() and "str" not in type_of(f.annotation).kinds():
            env[f.name] = Dtype(value)
        elif type(value).__module__ == "torch" and type(value).__name__ == "dtype":
            env[f.name] = Dtype(str(value).removeprefix("torch."))
    return env


def fires(check: Check, env: dict, work: Work | None = None) -> bool | None:
    """True: the check rejects ``env``; False: it passes; None: we cannot tell (skipped or unknown). ``work``: the
    evaluation budget, shared by the checks of one call (a fresh one when None)."""
    if check.skip is not None:
        return None
    if check.kind == "assert" and sys.flags.optimize:
        return None
    work = work or Work()
    when = holds(check, env, work)
    if not when:
        return when
    if check.kind == "raise":
        return True
    t = truth(evaluate(check.test, env, work))
    return None if t is UNKNOWN else not t


def violations(schema: Schema, env: dict, *, first: bool = True) -> list[Check]:
    out, work = [], Work()
    for check in schema.checks:
        if fires(check, env, work):
            out.append(check)
            if first:
                break
    return out


def run(schema: Schema, env: dict) -> tuple[Check | None, dict]:
    """(the first check that fires or None, how many checks were evaluated and how many could not be)."""
    counts, work = {"checks": len(schema.checks), "evaluated": 0, "not_evaluated": 0}, Work()
    for check in schema.checks:
        outcome = fires(check, env, work)
        if outcome:
            return check, counts
        counts["evaluated" if outcome is not None else "not_evaluated"] += 1
    return None, counts


def error_for(check: Check, env: dict, schema: Schema) -> ConstraintError:
    values = {name: _shown(env.get(name, UNKNOWN)) for name in check.reads}
    message = render(check.message, env) or f"{check.exception} in __post_init__"
    rule = f"{check.owner}.__post_init__ {check.kind} at {check.where()}"
    error = ConstraintError(rule, message, values, schema.version)
    error.check = check
    return error


def _shown(value):
    if isinstance(value, Dtype):
        return value.name
    return "<unknown>" if value is UNKNOWN else value  # ConstraintError bounds how it is shown


__all__ = ["CURATED", "CURATED_FUNCTIONS", "applies", "environment", "error_for", "fires", "holds", "run", "violations"]
