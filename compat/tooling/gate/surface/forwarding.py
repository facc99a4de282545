# SPDX-License-Identifier: Apache-2.0
"""Keywords through a project function's ``**kwargs`` into a megatron call: in
``def build(x=None, **kwargs): return TransformerConfig(**kwargs)``, a call ``build(x=1, new_field=2)`` anywhere in
the project passes ``new_field=`` to ``TransformerConfig``.

A file's scan records (scanner.py, detectors/):

- each forwarder: a module-level function, or a plain method of a top-level class, whose body calls a megatron
  callable with ``**kwargs`` (its own ``**`` parameter) or with ``**d`` where ``d.update(kwargs)`` is a statement
  directly in the body, outside any guard; key ``module.function`` or ``module.Class.method``, value (the
  callee's megatron paths, the forwarder's signature); a function with two such calls to different callees is
  ambiguous and forwards nothing; the callee may also be ``self.NAME(**kwargs)`` in a method, NAME a class-body
  binding (``ConfigClass = TransformerConfig``), read in the class of each ``self.method(...)`` call: the nearest
  ``NAME = X`` up its one-base project chain, X a megatron class or a project class whose chain defines no
  ``__init__`` (its own members, dataclass fields, then take their keywords; the rest go to its megatron base);
- each call of a project function (a name the file defines at module level or imports from a project module) or
  of ``self.method`` in a plain method of a top-level class, with keywords: a use with ``via=PROJECT_CALL`` named
  by the key (for ``self.method``, the calling class's key; the method is found up its project bases here).

``resolve_project_calls`` turns each call of a forwarder into a call of the callee with the keywords that land in
``**kwargs`` (those the forwarder does not name), as a splat (the forwarder may add any other keyword, so no
missing required argument is reported), or drops it. A method that a project subclass of its class defines again
forwards nothing (``self.method`` may run the subclass's). One level: a forwarder into another project function is
not followed.
"""
from __future__ import annotations

from dataclasses import replace

from .model import PARAMS, VARKW, parse_signature
from .project_classes import BASES, MAX_CHAIN, class_value, constructor

FORWARDER_WORDS, WORDS = " forwarders", "methods"  # in a scan's exports: the method names of the forwarders
# known when a later round scans a file (``self.name(...)`` calls are then walked in functions that spell them)
SELF_VALUE = "self."  # a forwarder's callee ``self.NAME``: what NAME is in the calling class (class_value)
PROJECT_CALL = "call of a project function"  # until resolved: the use's name is the callee's key
AMBIGUOUS = "two different callees"  # a forwarder entry; a plain string, as it is stored in the scan cache (JSON)


def add_forwarder(forwards: dict, key: str, targets: tuple, sig: str) -> None:
    """Note that ``key`` forwards its ``**`` parameter to ``targets`` (two different callees: ambiguous)."""
    known = forwards.get(key, ())
    forwards[key] = (targets, sig) if key not in forwards or known == (targets, sig) else AMBIGUOUS


def _method_key(key: str, classes: dict) -> str | None:
    """``module.Class.method`` -> the key of the class up ``Class``'s project chain that defines ``method``."""
    origin, _, method = key.rpartition(".")
    for _ in range(MAX_CHAIN):
        entry = classes.get(origin)
        if entry is None:
            return None
        if method in entry:
            return f"{origin}.{method}"
        bases = [b for b in entry[BASES] if b]
        if len(bases) != 1:
            return None  # megatron's, unknown, or several project bases: not decided here
        origin = bases[0]
    return None


def _redefined_below(key: str, classes: dict) -> bool:
    origin, _, method = key.rpartition(".")
    return any(origin in entry[BASES] and method in entry for entry in classes.values())


def resolve_project_calls(uses: list, forwards: dict, classes: dict) -> list:
    """``uses`` with each ``via=PROJECT_CALL`` use made a call of what its callee forwards ``**kwargs`` to, or
    dropped."""
    out = []
    for use in uses:
        if use.via != PROJECT_CALL:
            out.append(use)
            continue
        key = use.name if use.name in forwards else _method_key(use.name, classes)
        entry = forwards.get(key) if key else None
        if entry is None or entry == AMBIGUOUS or (key.rpartition(".")[0] in classes
                                                   and _redefined_below(key, classes)):
            continue  # not a forwarder, two callees, or a method a subclass may replace
        targets, sig = entry
        parsed = parse_signature(sig)
        if not parsed[VARKW]:
            continue
        named = {p[0] for p in parsed[PARAMS]}
        rule = use.rule
        if targets[0].startswith(SELF_VALUE):
            from .detectors.class_values import RULE as CLASS_VALUES  # the detector imports this module

            rule = CLASS_VALUES.id
            callee = _class_callee(use.name.rpartition(".")[0], targets[0][len(SELF_VALUE):], classes)
            if callee is None:
                continue
            targets, own = callee
            named |= own
        landed = [(k, line) for k, line in zip(use.keywords, use.keyword_lines) if k not in named]
        if landed:
            out.append(replace(use, name=targets[0], alternatives=targets[1:], keywords=tuple(k for k, _ in landed),
                               keyword_lines=tuple(line for _, line in landed), positional=None, splat=True,
                               via=f"through {key}", rule=rule))
    return out


def _class_callee(origin: str, name: str, classes: dict) -> tuple[tuple, frozenset] | None:
    """(megatron paths, keywords the project class takes itself) of ``self.name(...)`` in a method of ``origin``."""
    value = class_value(origin, name, classes)
    if value is None:
        return None
    kind, what = value
    if kind == "megatron":
        return tuple(what), frozenset()
    return constructor(what, classes)
