# SPDX-License-Identifier: Apache-2.0
"""Keys of dicts a scope builds with literal keys, so that ``Callee(**d)`` is checked for them as keywords.

Only what is certain to be in ``d`` when the scope reaches the call counts: ``d = {"k": ...}`` or
``d = dict(k=...)`` directly in the scope's body (not under ``if``/``for``/``try``/``with``: a key set under a
version check may be set only where the candidate has it), then ``d["k"] = ...`` directly in the body. A name bound
more than once in the scope gives nothing; a key the scope may remove (``del d["k"]``, ``d.pop("k")``) does not
count. What else may be in ``d`` (``d.update(...)``, ``**other`` in the literal, keys set in branches) is unknown,
so a call with ``**d`` still never looks complete: a missing required argument is not reported for it.
"""
from __future__ import annotations

import ast

from ...ast_tools import dotted
from .instances import Counts, bound_names

Keys = dict  # name -> ((key, line), ...)


def _literal_keys(value) -> list | None:
    """The literal string keys of ``{...}`` / ``dict(k=...)`` with their lines; None when ``value`` is neither."""
    if isinstance(value, ast.Dict):
        return [(k.value, k.lineno) for k in value.keys if isinstance(k, ast.Constant) and isinstance(k.value, str)]
    if isinstance(value, ast.Call) and dotted(value.func) == "dict":
        return [(k.arg, getattr(k, "lineno", value.lineno)) for k in value.keywords if k.arg]
    return None


def _subscript_key(target, name: str):
    if isinstance(target, ast.Subscript) and isinstance(target.value, ast.Name) and target.value.id == name \
            and isinstance(target.slice, ast.Constant) and isinstance(target.slice.value, str):
        return target.slice.value
    return None


def _removed(scope_nodes, names: set) -> set:
    """(name, key) pairs a ``del d["k"]`` or ``d.pop("k")`` anywhere in the scope may remove."""
    out = set()
    for node in scope_nodes:
        if isinstance(node, ast.Delete):
            for t in node.targets:
                for name in names:
                    key = _subscript_key(t, name)
                    if key is not None:
                        out.add((name, key))
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "pop" \
                and isinstance(node.func.value, ast.Name) and node.func.value.id in names and node.args \
                and isinstance(node.args[0], ast.Constant):
            out.add((node.func.value.id, node.args[0].value))
    return out


def dict_keys(body: list, args: ast.arguments | None, walrus: bool, counts: Counts | None = None) -> Keys:
    """name -> the keys certain to be in the dict it holds, for the names of one scope built as above (``counts``:
    where the caller keeps each scope's bound_names)."""
    found: dict[str, list] = {}
    for stmt in body:
        if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1:
            target = stmt.targets[0]
            if isinstance(target, ast.Name):
                keys = _literal_keys(stmt.value)
                if keys is not None:
                    found[target.id] = list(keys)
                continue
            for name in list(found):
                key = _subscript_key(target, name)
                if key is not None:
                    found[name].append((key, target.lineno))
    if not found:
        return {}
    bound = counts(body, args) if counts is not None else bound_names(body, args, walrus)
    nodes = [n for stmt in body for n in ast.walk(stmt)]
    removed = _removed(nodes, set(found))
    return {name: tuple((k, line) for k, line in keys if (name, k) not in removed)
            for name, keys in found.items() if bound[name] == 1}
