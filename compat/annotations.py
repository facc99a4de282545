# SPDX-License-Identifier: Apache-2.0
"""Annotations read semantically, in one place for the gate and the type checks.

``Optional[int]``, ``int | None``, ``"Optional[int]"`` and ``typing.Union[None, int]`` are one type; ``Literal[...]``
gives its choices. Anything not understood becomes "any" (accepted as is): a type check never refuses a value
because of an annotation it cannot read.
"""
from __future__ import annotations

import ast
from dataclasses import dataclass
from functools import lru_cache

_PREFIXES = ("typing_extensions.", "typing.", "collections.abc.", "builtins.")
_SCALARS = {"bool": "bool", "int": "int", "float": "float", "str": "str", "None": "None", "NoneType": "None",
            "torch.dtype": "dtype", "dtype": "dtype", "Callable": "callable", "callable": "callable",
            "Any": "any", "object": "any"}
_CONTAINERS = {"List": "list", "list": "list", "Sequence": "list", "MutableSequence": "list", "Tuple": "tuple",
               "tuple": "tuple", "Dict": "dict", "dict": "dict", "Mapping": "dict", "Set": "set", "set": "set",
               "FrozenSet": "set", "frozenset": "set"}


@dataclass(frozen=True)
class Member:
    kind: str  # None, bool, int, float, str, dtype, callable, list, tuple, dict, set, literal, any
    args: tuple = ()  # element Members for containers; the values for literal
    name: str = ""  # the unrecognised type's name, for kind "any"

    def key(self) -> str:
        if self.kind == "literal":
            return "Literal[" + ", ".join(sorted(map(repr, self.args))) + "]"
        if self.kind in ("list", "tuple", "dict", "set") and self.args:
            return f"{self.kind}[{', '.join(a if isinstance(a, str) else a.key() for a in self.args)}]"
        return self.name or self.kind


@dataclass(frozen=True)
class TypeSpec:
    members: tuple[Member, ...]

    @property
    def optional(self) -> bool:
        return any(m.kind in ("None", "any") for m in self.members)

    @property
    def choices(self) -> tuple | None:
        """The Literal values when every non-None member is a Literal, else None."""
        lits = [m for m in self.members if m.kind != "None"]
        if lits and all(m.kind == "literal" for m in lits):
            return tuple(v for m in lits for v in m.args)
        return None

    def kinds(self) -> set[str]:
        return {m.kind for m in self.members}

    def key(self) -> str:
        return " | ".join(sorted({m.key() for m in self.members}))


def _name(node: ast.expr) -> str:
    text = ast.unparse(node)
    for prefix in _PREFIXES:
        text = text.removeprefix(prefix)
    return text


def _members(node: ast.expr) -> list[Member]:
    if isinstance(node, ast.Constant):
        if node.value is None:
            return [Member("None")]
        if isinstance(node.value, str):  # a quoted (forward) annotation
            try:
                return _members(ast.parse(node.value, mode="eval").body)
            except SyntaxError:
                return [Member("any", name=node.value)]
        return [Member("any", name=repr(node.value))]
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitOr):
        return _members(node.left) + _members(node.right)
    if isinstance(node, ast.Subscript):
        base = _name(node.value)
        args = list(node.slice.elts) if isinstance(node.slice, ast.Tuple) else [node.slice]
        if base == "Optional":
            return _members(args[0]) + [Member("None")]
        if base == "Union":
            return [m for a in args for m in _members(a)]
        if base == "Literal":
            values = []
            for a in args:
                try:
                    values.append(ast.literal_eval(a))
                except (ValueError, SyntaxError):
                    return [Member("any", name=ast.unparse(node))]
            return [Member("literal", tuple(values))]
        if base in ("Annotated", "Final", "ClassVar", "InitVar") and args:
            return _members(args[0])
        if base in _CONTAINERS:
            kind = _CONTAINERS[base]
            elems = tuple("..." if isinstance(a, ast.Constant) and a.value is Ellipsis else _spec(a)
                          for a in args)
            return [Member(kind, elems)]
        if base == "Callable":
            return [Member("callable")]
        return [Member("any", name=_name(node))]
    text = _name(node)
    if text in _SCALARS:
        return [Member(_SCALARS[text])]
    if text in _CONTAINERS:
        return [Member(_CONTAINERS[text])]
    return [Member("any", name=text)]


def _spec(node: ast.expr) -> Member:
    """One container element: a Member (a union inside a container becomes 'any' unless it is one member)."""
    ms = _members(node)
    return ms[0] if len(ms) == 1 else Member("any", name=" | ".join(sorted(m.key() for m in ms)))


@lru_cache(maxsize=4096)
def type_of(annotation: str) -> TypeSpec:
    """The semantic type of an annotation written as source text."""
    try:
        node = ast.parse(annotation.strip(), mode="eval").body
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return TypeSpec((Member("any", name=annotation),))
    members, seen = [], set()
    for m in _members(node):
        if m.key() not in seen:
            seen.add(m.key())
            members.append(m)
    return TypeSpec(tuple(members))


def type_key(annotation) -> str:
    """A spelling-independent key: ``Optional[int]``, ``int | None`` and ``"Union[None, int]"`` all give 'None | int'."""
    if not isinstance(annotation, str):
        annotation = ast.unparse(annotation)
    return type_of(annotation).key()


__all__ = ["Member", "TypeSpec", "type_key", "type_of"]
