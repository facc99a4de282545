# SPDX-License-Identifier: Apache-2.0
"""What a change means for existing configs: does every old value still fit a new annotation, can a new check fire
for a config written for the old release, and which kwargs keep an old default.

A change is breaking only when something an existing config does stops working or silently changes: an old value
that no longer fits, a default that an unset field now reads differently, a check that can reject an old config.
"""
from __future__ import annotations

import ast
from dataclasses import dataclass

from ...annotations import Member, TypeSpec, type_of
from ...registry import Check, Field, Schema

WIDENED, NARROWED, UNKNOWN = "widened", "narrowed", "unknown"


@dataclass(frozen=True)
class Fit:
    verdict: str  # widened: every old value fits; narrowed: some old value no longer does; unknown
    lost: tuple[str, ...] = ()  # old members (or Literal values) the new annotation no longer admits
    gained: tuple[str, ...] = ()  # what the new annotation admits that the old did not


def _literal_values(spec: TypeSpec) -> set:
    return {v for m in spec.members if m.kind == "literal" for v in m.args}


def _covers(new: TypeSpec, member: Member) -> bool | None:
    """Whether ``new`` admits every value of the old ``member`` (None: cannot tell)."""
    kinds = new.kinds()
    if any(m.kind == "any" and not m.name for m in new.members):  # Any / object (a named unknown type is not)
        return True
    if member.kind == "any":
        return True if any(m.key() == member.key() for m in new.members) else None
    if member.kind == "literal":
        values = _literal_values(new)
        return all(v in values or type(v).__name__ in kinds or (v is None and "None" in kinds)
                   for v in member.args)
    if member.kind == "int" and "float" in kinds:
        return True  # PEP 484: an int is accepted where a float is expected
    same = [m for m in new.members if m.kind == member.kind]
    if not same:
        return False
    if not member.args or any(not m.args for m in same):
        return True if any(not m.args for m in same) else None
    return True if any(m.key() == member.key() for m in same) else None


def annotation_fit(old: str, new: str) -> Fit:
    """Does every value the old annotation admits still fit the new one?"""
    o, n = type_of(old), type_of(new)
    lost, unknown = [], False
    for member in o.members:
        if member.kind == "literal":
            gone = [v for v in member.args if not _covers(n, Member("literal", (v,)))]
            lost += [repr(v) for v in gone]
            continue
        covered = _covers(n, member)
        if covered is None:
            unknown = True
        elif not covered:
            lost.append(member.key())
    gained = sorted(repr(v) for v in _literal_values(n) - _literal_values(o))
    gained += sorted(m.key() for m in n.members if m.kind != "literal" and _covers(o, m) is False)
    if lost:
        return Fit(NARROWED, tuple(lost), tuple(gained))
    return Fit(UNKNOWN if unknown else WIDENED, (), tuple(gained))


# ------------------------------------------------------------------------------------------- checks
def _is_off(field: Field) -> bool:
    return not field.required and field.exact and field.default in (None, False, 0, "", (), [])


def _self_attr(node: ast.expr) -> str | None:
    if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "self":
        return node.attr
    return None


def _switched_on(node: ast.expr) -> str | None:
    """The field ``node`` tests for being set: ``self.x``, ``self.x is not None``, ``len(self.x) > 0``, ``self.x is
    True``, ``self.x == True``; None for anything else."""
    name = _self_attr(node)
    if name:
        return name
    if isinstance(node, ast.Compare) and len(node.ops) == 1:
        left, op, right = node.left, node.ops[0], node.comparators[0]
        if isinstance(left, ast.Call) and isinstance(left.func, ast.Name) and left.func.id == "len" \
                and len(left.args) == 1 and isinstance(op, (ast.Gt, ast.NotEq)) \
                and isinstance(right, ast.Constant) and right.value == 0:
            return _self_attr(left.args[0])
        if isinstance(right, ast.Constant) and (
                (isinstance(op, ast.IsNot) and right.value is None)
                or (isinstance(op, (ast.Is, ast.Eq)) and right.value is True)):
            return _self_attr(left)
    return None


def _conjuncts(text: str) -> list[ast.expr]:
    try:
        node = ast.parse(text, mode="eval").body
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return []
    if isinstance(node, ast.BoolOp) and isinstance(node.op, ast.And):
        return list(node.values)
    return [node]


def gated_by_new_field(check: Check, base: Schema, cand: Schema) -> str | None:
    """The new, default-off field whose being set the check requires (so it cannot fire for a config written for
    ``base``, which cannot set it); None when the check can fire for an existing config."""
    for clause in check.when:
        for part in _conjuncts(clause):
            name = _switched_on(part)
            if name and name not in base and name in cand and _is_off(cand.get(name)):
                return name
    return None


def check_key(check: Check) -> tuple:
    return check.kind, check.when, check.test


def new_checks(base: Schema, cand: Schema) -> list[Check]:
    """The candidate's checks that the base release does not have (same kind, conditions and test)."""
    old = {check_key(c) for c in base.checks}
    return [c for c in cand.checks if check_key(c) not in old]


def keep_old_kwargs(name: str, old: Field) -> str:
    """The keyword argument that keeps the old behaviour, as source text (``name=old``)."""
    return f"{name}={old.default_text}"
