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

import bisect
import os
import sys

from . import version as _v
from .errors import CompatError, ConstraintError
from .evaluate import UNKNOWN, Dtype, Work, evaluate, render, truth
from .registry import Check, Schema, Write
from .value_equality import same_value

CURATED = "rules.json"  # the owner of a curated check
_COPY_COST = 64  # Work charged per value copied into a new version of the values (a node visit's cost)


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


def holds(check: Check, env: dict, work: Work | None = None, timeline: Timeline | None = None) -> bool | None:
    """Whether every condition of ``check.when`` is True (None: one is unknown). With a ``timeline``, each condition
    is read with the values of the moment it was evaluated (``check.when_at``)."""
    work = work or Work()
    functions = CURATED_FUNCTIONS if check.owner == CURATED else None
    scope = None if check.owner == CURATED else check.owner
    enums = timeline.enums if timeline is not None else None
    for i, cond in enumerate(check.when):
        values = timeline.at(check.when_at[i]) if timeline is not None and check.when_at else env
        t = truth(evaluate(cond, values, work, functions, scope, enums))
        if t is UNKNOWN:
            return None
        if not t:
            return False
    return True


class Timeline:
    """The field values ``__post_init__`` sees after each of its writes (``Schema.effects``), replayed lazily from
    the first values: a write whose conditions are False does not happen; one that surely happens with a value the
    evaluator computes sets it; any other (conditions unknown, in a loop, a value it cannot compute, a target it
    cannot name) makes what it may set UNKNOWN. A version of the values is kept only where a write changed one."""

    def __init__(self, schema: Schema, env: dict, work: Work):
        self._writes, self._work, self.enums = schema.effects, work, schema.enums
        self._applied: list[int] = [0]  # writes applied before each version of the values (increasing)
        self._versions: list[dict] = [env]
        self._done = 0

    def at(self, position: int) -> dict:
        """The values after the first ``position`` writes."""
        while self._done < min(position, len(self._writes)):
            self._apply(self._writes[self._done])
            self._done += 1
        return self._versions[bisect.bisect_right(self._applied, position) - 1]

    def _apply(self, write: Write) -> None:
        current = self._versions[-1]
        if write.targets == ():
            return
        when = True
        for cond, position in zip(write.when, write.when_at):
            t = truth(evaluate(cond, self.at(position), self._work, scope=write.owner, enums=self.enums))
            if t is not UNKNOWN and not t:
                return
            if t is UNKNOWN:
                when = None
        targets = tuple(current) if write.targets is None else write.targets
        value = UNKNOWN
        if when and write.maybe is None and write.value is not None and write.targets is not None:
            value = evaluate(write.value, current, self._work, scope=write.owner, enums=self.enums)
        if all(same_value(current.get(t, UNKNOWN), value) for t in targets):
            return
        self._work.left -= _COPY_COST * len(current)  # a new version of the values, charged like any value made
        if self._work.left < 0:  # the budget is spent: from here on nothing is known
            value, targets = UNKNOWN, tuple(current)
        self._applied.append(self._done + 1)
        self._versions.append({**current, **dict.fromkeys(targets, value)})


def fires(check: Check, env: dict, work: Work | None = None, timeline: Timeline | None = None) -> bool | None:
    """True: the check rejects ``env``; False: it passes; None: we cannot tell (skipped or unknown). ``work``: the
    evaluation budget, shared by the checks of one call (a fresh one when None). ``timeline``: the writes of
    ``__post_init__`` replayed, for an extracted check (its test is read with the values at ``check.at``)."""
    if check.skip is not None:
        return None
    if check.kind == "assert" and sys.flags.optimize:
        return None
    work = work or Work()
    when = holds(check, env, work, timeline)
    if not when:
        return when
    if check.kind == "raise":
        return True
    values = timeline.at(check.at) if timeline is not None else env
    t = truth(evaluate(check.test, values, work, scope=None if check.owner == CURATED else check.owner,
                       enums=timeline.enums if timeline is not None else None))
    return None if t is UNKNOWN else not t


def violations(schema: Schema, env: dict, *, first: bool = True) -> list[Check]:
    out, work = [], Work()
    timeline = Timeline(schema, env, work)
    for check in schema.checks:
        if fires(check, env, work, timeline):
            out.append(check)
            if first:
                break
    return out


def run(schema: Schema, env: dict) -> tuple[Check | None, dict]:
    """(the first check that fires or None, how many checks were evaluated and how many could not be)."""
    counts, work = {"checks": len(schema.checks), "evaluated": 0, "not_evaluated": 0}, Work()
    timeline = Timeline(schema, env, work)
    for check in schema.checks:
        outcome = fires(check, env, work, timeline)
        if outcome:
            return check, counts
        counts["evaluated" if outcome is not None else "not_evaluated"] += 1
    return None, counts


def error_for(check: Check, env: dict, schema: Schema) -> ConstraintError:
    if check.owner != CURATED:
        env = Timeline(schema, env, Work()).at(check.at)  # the values the check read, after the writes before it
    values = {name: _shown(env.get(name, UNKNOWN)) for name in check.reads}
    message = render(check.message, env, None if check.owner == CURATED else check.owner) or \
        f"{check.exception} in __post_init__"
    rule = f"{check.owner}.__post_init__ {check.kind} at {check.where()}"
    error = ConstraintError(rule, message, values, schema.version)
    error.check = check
    return error


def _shown(value):
    if isinstance(value, Dtype):
        return value.name
    return "<unknown>" if value is UNKNOWN else value  # ConstraintError bounds how it is shown


__all__ = ["CURATED", "CURATED_FUNCTIONS", "Timeline", "applies", "error_for", "fires", "holds", "run", "violations"]
