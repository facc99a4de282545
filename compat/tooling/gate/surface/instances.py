# SPDX-License-Identifier: Apache-2.0
"""Names in a project that hold an instance of a megatron class, so that ``w.method(...)`` and ``w.attr`` can be
checked against that class (project.py records them, check.py resolves them with ``via=INSTANCE``).

Precision over recall: a name holds an instance only where its type cannot be anything else.

- ``w = X(...)`` (or ``w: T = X(...)``) with ``X`` a megatron name, where ``w`` is bound nowhere else in the
  same scope (no second assignment, loop target, ``with``/``except`` name, import, def, ``global``/``nonlocal``);
- a parameter annotated with a megatron name (``def f(m: GPTModel)``) that its function never rebinds: it may
  hold a subclass (``TransformerConfig`` subclasses add fields), so only calls of members the class has are
  checked (``via=ANNOTATED``), never a missing member;
- ``self.x = X(...)`` in a class's ``__init__`` where nothing in the class stores ``x`` on any object again
  (``setattr`` with a computed name: nothing is held).

Whether ``X`` is a class (and not a factory function) is decided against the candidate, in check.py.
"""
from __future__ import annotations

import ast
from collections import Counter
from typing import Callable

from .model import dotted, statements

INSTANCE = "instance of a megatron class"  # a Use's ``via``: the name before the last dot is the class
ANNOTATED = "annotated as a megatron class"  # the same for a parameter: it may hold a subclass, which may add members

Resolve = Callable[[ast.AST], "tuple | None"]  # an expression -> the megatron paths it denotes (or None)


def _bound_names(nodes) -> Counter:
    """How often each name is bound in one scope: stores, deletes, imports, defs, handlers, captures, params;
    ``global``/``nonlocal`` names count as bound elsewhere too. Nested defs, classes and lambdas are their own
    scopes (only their names count here)."""
    counts: Counter = Counter()
    stack = list(nodes)
    while stack:
        node = stack.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            counts[node.name] += 1
            stack.extend(node.decorator_list)
            continue
        if isinstance(node, ast.Lambda):
            continue
        if isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Load):
            counts[node.id] += 1
        elif isinstance(node, ast.arg):
            counts[node.arg] += 1
        elif isinstance(node, ast.alias):
            counts[(node.asname or node.name).split(".")[0]] += 1
        elif isinstance(node, (ast.Global, ast.Nonlocal)):
            for name in node.names:
                counts[name] += 2
        elif isinstance(node, ast.ExceptHandler) and node.name:
            counts[node.name] += 1
        elif type(node).__name__.startswith("Match"):
            for attr in ("name", "rest"):
                if isinstance(getattr(node, attr, None), str):
                    counts[getattr(node, attr)] += 1
        stack.extend(ast.iter_child_nodes(node))
    return counts


def _constructed(value, resolve: Resolve) -> tuple | None:
    """``X(...)`` with ``X`` a megatron name: its paths."""
    if isinstance(value, ast.Call) and dotted(value.func):
        return resolve(value.func)
    return None


def scope_instances(body: list, args: ast.arguments | None, resolve: Resolve) -> dict:
    """name -> (megatron class paths, the ``via`` of its uses), for the names of one scope (a function or module
    body) that hold an instance and nothing else."""
    found: dict[str, tuple] = {}
    params = (args.posonlyargs + args.args + args.kwonlyargs) if args is not None else []
    for arg in params:
        if arg.annotation is not None and dotted(arg.annotation):
            paths = resolve(arg.annotation)
            if paths:
                found[arg.arg] = paths, ANNOTATED
    for stmt in statements(body):
        if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name):
            name, value = stmt.targets[0].id, stmt.value
        elif isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name):
            name, value = stmt.target.id, stmt.value
        else:
            continue
        paths = _constructed(value, resolve)
        if paths:
            found[name] = paths, INSTANCE
    if not found:
        return {}
    counts = _bound_names(list(body) + ([args] if args is not None else []))
    return {name: paths for name, paths in found.items() if counts[name] == 1}


def held_attributes(node: ast.ClassDef, resolve: Resolve) -> dict:
    """attr -> (megatron class paths, INSTANCE), for ``self.attr = X(...)`` in the class's ``__init__`` that nothing else in
    the class stores again."""
    init = next((i for i in node.body if isinstance(i, (ast.FunctionDef, ast.AsyncFunctionDef))
                 and i.name == "__init__" and i.args.args), None)
    if init is None:
        return {}
    self_name = init.args.args[0].arg
    found: dict[str, tuple] = {}
    for stmt in statements(init.body):
        if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1:
            target, value = stmt.targets[0], stmt.value
        elif isinstance(stmt, ast.AnnAssign):
            target, value = stmt.target, stmt.value
        else:
            continue
        if isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name) and target.value.id == self_name:
            paths = _constructed(value, resolve)
            if paths:
                found[target.attr] = paths, INSTANCE
    if not found:
        return {}
    stores: Counter = Counter()
    for sub in ast.walk(node):
        if isinstance(sub, ast.Attribute) and not isinstance(sub.ctx, ast.Load):
            stores[sub.attr] += 1
        elif isinstance(sub, ast.Call) and dotted(sub.func) in ("setattr", "delattr"):
            name = sub.args[1] if len(sub.args) > 1 else None
            if not (isinstance(name, ast.Constant) and isinstance(name.value, str)):
                return {}
            stores[name.value] += 2
    return {attr: paths for attr, paths in found.items() if stores[attr] == 1}


def held_path(expr, instance_of: Callable[[str], "tuple | None"], self_name: str | None, held: dict) -> tuple | None:
    """``w.attr`` / ``self.x.attr`` (one attribute off a held instance): (``Class.attr`` for each class it may be,
    the use's ``via``)."""
    if not isinstance(expr, ast.Attribute):
        return None
    owner = expr.value
    found = None
    if isinstance(owner, ast.Name):
        found = instance_of(owner.id)
    elif isinstance(owner, ast.Attribute) and isinstance(owner.value, ast.Name) and self_name \
            and owner.value.id == self_name:
        found = held.get(owner.attr)
    return (tuple(f"{p}.{expr.attr}" for p in found[0]), found[1]) if found else None
