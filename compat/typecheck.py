# SPDX-License-Identifier: Apache-2.0
"""Check one value against a field's annotation (read by ``compat.annotations``); return its canonical form.

Canonical forms: a dtype becomes its name ("bfloat16"), an int given for a float becomes a float, a list given for
a ``Tuple[...]`` becomes a tuple. Other values are returned unchanged (lists stay lists). A member the parser
could not read ("any") accepts everything: an annotation we do not understand never refuses a value, unless it
names an Enum whose members the registry knows (then a member or a member's name is accepted).
"""
from __future__ import annotations

import enum

from .annotations import Member, TypeSpec
from .dtypes import accepted_spellings, dtype_name
from .errors import FieldTypeError, InvalidValueError

_NO = object()


def describe(member: Member, enums: tuple = ()) -> str:
    known = enum_members(member, enums)
    if known is not None:
        return f"a {known[0]} member or its name ({', '.join(known[1])})"
    if member.kind == "dtype":
        return f"a torch.dtype or one of {accepted_spellings()}"
    if member.kind == "tuple" and member.args and all(
            a == "..." or (isinstance(a, Member) and a.kind == "str") for a in member.args):
        return "a list or tuple of str"
    if member.kind in ("list", "tuple", "set", "dict"):
        return f"a {member.key()}"
    if member.kind == "callable":
        return "a callable"
    return member.key()


def enum_members(member: Member, enums: tuple) -> tuple | None:
    """(class name, members) of the Enum an "any" member names (a live annotation spells it with its module)."""
    if member.kind != "any" or not member.name:
        return None
    short = member.name.rsplit(".", 1)[-1]
    return next(((cls, names) for cls, names in enums if cls == short), None)


def _one(member: Member, value, enums: tuple = ()):
    """The canonical value if ``member`` accepts ``value``, else _NO."""
    kind = member.kind
    if kind == "any":
        known = enum_members(member, enums)
        if known is None:
            return value
        if isinstance(value, str):
            return value if value in known[1] else _NO
        if isinstance(value, enum.Enum) and type(value).__name__ == known[0] and value.name in known[1]:
            return value
        return _NO
    if kind == "None":
        return None if value is None else _NO
    if kind == "bool":
        return value if isinstance(value, bool) else _NO
    if kind == "int":  # a bool is an int to Python and to Megatron (window_attn_skip_freq=[True, False])
        return value if isinstance(value, int) else _NO
    if kind == "float":
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            return _NO
        return float(value)
    if kind == "str":
        return value if isinstance(value, str) else _NO
    if kind == "literal":
        return value if any(value == v and type(value) is type(v) for v in member.args) else _NO
    if kind == "dtype":
        name = dtype_name(value)
        return _NO if name is None else name
    if kind == "callable":
        return value if callable(value) else _NO
    if kind in ("list", "tuple"):
        if isinstance(value, (str, bytes)) or not isinstance(value, (list, tuple)):
            return _NO
        elems = [a for a in member.args if a != "..."]
        if len(elems) == 1 and isinstance(elems[0], Member) and (len(member.args) == 2 or kind == "list"):
            for item in value:
                if _one(elems[0], item, enums) is _NO:
                    return _NO
        return tuple(value) if kind == "tuple" else value
    if kind == "dict":
        return value if isinstance(value, dict) else _NO
    if kind == "set":
        return value if isinstance(value, (set, frozenset, list, tuple)) else _NO
    return value


def check(name: str, value, spec: TypeSpec, default=None, *, enums: tuple = (), accept: frozenset = frozenset()):
    """``value`` in canonical form, or FieldTypeError / InvalidValueError naming the field and the value.

    ``enums``: (class, member names) of the Enums the annotation names. ``accept``: the shapes the target release
    reads as meant although the annotation excludes them (``compat/data/type_acceptances.json``): "none" (None
    kept) and "false_as_none" (False sent as None).
    """
    members = spec.members
    if value is None:
        if spec.optional or default is None or "none" in accept:
            return None
    if value is False and "false_as_none" in accept:
        return None
    kinds = spec.kinds()
    # exact type first, so that an int stays an int where both int and float are allowed
    order = sorted(members, key=lambda m: 0 if m.kind in ("bool", "int", "str", "None", "literal") else 1)
    for member in order:
        out = _one(member, value, enums)
        if out is not _NO:
            return out
    named = [e for m in members if (e := enum_members(m, enums)) is not None]
    if named and (isinstance(value, str) or isinstance(value, enum.Enum)):
        raise InvalidValueError(name, value, "must name a member of " + "; ".join(
            f"{cls}: {', '.join(names)}" for cls, names in named))
    literals = [m for m in members if m.kind == "literal"]
    if literals and all(_one(Member(_base_kind(v)), value) is not _NO for m in literals for v in m.args[:1]):
        choices = [v for m in literals for v in m.args]
        raise InvalidValueError(name, value, f"must be one of {', '.join(map(repr, choices))}")
    if value is None:
        expected = " or ".join(describe(m, enums) for m in members if m.kind != "None")
        raise FieldTypeError(name, value, f"{expected} (None is not allowed)")
    if kinds == {"None"}:
        raise FieldTypeError(name, value, "None")
    raise FieldTypeError(name, value, " or ".join(describe(m, enums) for m in members if m.kind != "None"))


def _base_kind(v) -> str:
    return {bool: "bool", int: "int", float: "float", str: "str"}.get(type(v), "any")


__all__ = ["check", "describe", "enum_members"]
