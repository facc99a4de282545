# SPDX-License-Identifier: Apache-2.0
"""Generic helpers over ``ast`` trees, shared by the candidate's model and the project's scan: one fast walker
(``walk``), a node's children (``child_nodes``), dotted names (``dotted``) and the statements of a body
(``statements``).

The walkers read a node's fields inline rather than through ``ast.iter_child_nodes`` or ``ast.walk``: a generator
step or a call per node doubles a walk's time, and these run on every parsed file.
"""
from __future__ import annotations

import ast

DEFS = frozenset({ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef})
COMPOUND = frozenset({ast.If, ast.For, ast.AsyncFor, ast.While, ast.With, ast.AsyncWith, ast.Try,  # with blocks
                      *(getattr(ast, name) for name in ("TryStar", "Match") if hasattr(ast, name)), *DEFS})
# node type -> its fields but ``ctx`` (a Load/Store/Del marker: nothing below it), filled as walks meet types
_FIELDS: dict = {}
_ALL_FIELDS: dict = {}  # node type -> all its fields, ``ctx`` included (``walk(..., ctx=True)``)
_NOTHING: frozenset = frozenset()


def walk(node: ast.AST, only: frozenset | None = None, prune: frozenset = _NOTHING, *, ctx: bool = False) -> list:
    """The nodes under ``node``, itself included, in ``ast.walk``'s order (breadth first), as one list: those of
    the types in ``only`` (every node when None). Nothing below a node whose type is in ``prune`` is walked (the
    node itself still counts); the ``ctx`` markers are walked only with ``ctx`` (``ast.walk`` yields them)."""
    found, queue, index, node_type = [], [node], 0, ast.AST
    fields_of = _ALL_FIELDS if ctx else _FIELDS
    while index < len(queue):
        current = queue[index]
        index += 1
        if not isinstance(current, node_type):
            continue  # what a list field holds besides nodes (None in a dict's keys, names): skipped when taken
        kind = type(current)  # node types by identity: the parser makes no subclasses of them
        if only is None or kind in only:
            found.append(current)
        if kind in prune:
            continue
        fields = fields_of.get(kind)
        if fields is None:
            fields = fields_of[kind] = tuple(f for f in kind._fields if ctx or f != "ctx")
        for name in fields:
            value = getattr(current, name, None)
            if type(value) is list:
                queue.extend(value)
            elif isinstance(value, node_type):
                queue.append(value)
    return found


def child_nodes(node: ast.AST) -> list:
    """``ast.iter_child_nodes(node)`` as a list, without its generators (the surface scan's most frequent step)."""
    out = []
    for name in node._fields:
        value = getattr(node, name, None)
        if isinstance(value, ast.AST):
            out.append(value)
        elif type(value) is list:
            out.extend(item for item in value if isinstance(item, ast.AST))
    return out


def dotted(node) -> str | None:
    """``a.b.c`` for a Name/Attribute chain, else None."""
    kind = type(node)  # node types by identity: the parser makes no subclasses of them
    if kind is ast.Name:
        return node.id
    parts = []
    while kind is ast.Attribute:
        parts.append(node.attr)
        node = node.value
        kind = type(node)
    if kind is ast.Name:
        return ".".join([node.id] + parts[::-1])
    return None


def statements(body: list, *, into_defs: bool = False):
    """Every statement in a body, descending into compound statements, and into nested defs and classes only with
    ``into_defs`` (expressions are not walked: this runs per file). In source order: a statement, then its body,
    orelse, finalbody, handlers and cases. A stack of iterators, not nested generators: a yield costs the same
    however deep the statement is."""
    stack = [iter(body)]
    while stack:
        for stmt in stack[-1]:
            yield stmt
            kind = type(stmt)
            if kind not in COMPOUND or (not into_defs and kind in DEFS):
                continue
            nested = blocks(stmt)
            if nested:
                stack.append(iter(nested))
                break
        else:
            stack.pop()


def blocks(stmt) -> list:
    """The statements directly in a compound statement's blocks, in statements' order."""
    nested = [*(getattr(stmt, "body", None) or ()), *(getattr(stmt, "orelse", None) or ()),
              *(getattr(stmt, "finalbody", None) or ())]
    for handler in getattr(stmt, "handlers", None) or ():
        nested += handler.body
    for case in getattr(stmt, "cases", None) or ():
        nested += case.body
    return nested
