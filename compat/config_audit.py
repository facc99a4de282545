# SPDX-License-Identifier: Apache-2.0
"""``compat.audit``: compare the config object Megatron will finally receive with what was resolved.

Call it right before ``DistributedDataParallel(...)``, ``get_megatron_optimizer(...)`` or ``GPTModel(...)``, after
every wrapper has run. The reference is a fresh object built from the resolution's kwargs (so ``__post_init__``'s
own rewrites are expected, not reported); when that cannot be built, the resolution's values are compared for the
fields ``__post_init__`` does not write. A value changed after construction is also run through the extracted
``__post_init__`` checks, as if it had been passed to the constructor: a field set later that the class would have
refused is reported too.
"""
from __future__ import annotations

import dataclasses
import warnings
from dataclasses import dataclass

from . import precheck
from .effective import post_init_values
from .errors import AuditError, CompatError
from .kwargs import materialize
from .resolution import COERCED, CROSS, RESOLVER, USER, Resolution
from .value_equality import same_value


@dataclass(frozen=True)
class Difference:
    field: str  # the object's field name
    expected: object
    actual: object
    reason: str
    kind: str = "value"  # "value": differs from the resolution; "check": a __post_init__ check rejects it

    def __str__(self) -> str:
        return f"{self.field}: expected {self.expected!r}, found {self.actual!r} ({self.reason})"


def _reference(cls, kwargs: dict):
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return cls(**kwargs)
    except Exception:  # a subclass may need more than the resolution holds: fall back to the resolution
        return None


def audit(obj: object, resolution: Resolution, *, strict: bool = False) -> list[Difference]:
    """Differences between ``obj`` and ``resolution`` (``.field``, ``.expected``, ``.actual``); raise
    ``AuditError`` instead when ``strict`` and there are any."""
    from .build import live_schema, live_values

    if not dataclasses.is_dataclass(obj) or isinstance(obj, type):
        raise CompatError(f"audit needs a config object (a dataclass instance), got {type(obj).__name__}")
    if not isinstance(resolution, Resolution):
        raise CompatError(f"audit needs the Resolution the object was meant to follow, got {type(resolution).__name__}")
    schema = live_schema(type(obj), resolution.config)
    kwargs = materialize(resolution.kwargs, resolution)
    try:
        kwargs = live_values(type(obj), kwargs)
    except CompatError:  # a str naming no member: compare with the resolution as it is
        pass
    reference = _reference(type(obj), kwargs)
    by_target = {f.target_name: f for f in resolution.fields.values() if f.target_name}
    diffs: list[Difference] = []
    for f in schema.fields:
        actual = getattr(obj, f.name)
        if reference is not None:
            expected = getattr(reference, f.name)
            if callable(expected) and callable(actual) and f.name in schema.post_init_writes and \
                    f.name not in kwargs:
                continue  # a function __post_init__ makes afresh for each object (init_method)
            why = "differs from an object built from the resolution"
        else:
            fr = by_target.get(f.name)
            if fr is None or f.name in schema.post_init_writes or (
                    schema.dynamic_writes and fr.source not in (USER, RESOLVER, CROSS, COERCED)):
                continue
            expected = kwargs.get(f.name, fr.value)
            why = f"differs from the resolution ({fr.source})"
        if not same_value(actual, expected):
            diffs.append(Difference(f.name, expected, actual, why))
    changed = {d.field: d.actual for d in diffs}
    if changed:
        env = post_init_values(schema, resolution.kwargs, changed)
        for check in precheck.violations(schema, env, first=False):
            involved = [n for n in check.reads if n in changed]
            if not involved:
                continue
            error = precheck.error_for(check, env, schema)
            diffs.append(Difference(involved[0], f"a value {check.where()} accepts", changed[involved[0]],
                                    str(error), "check"))
    if strict and diffs:
        raise AuditError(f"{schema.class_name} differs from its resolution: " + "; ".join(map(str, diffs)), diffs)
    return diffs


__all__ = ["Difference", "audit"]
