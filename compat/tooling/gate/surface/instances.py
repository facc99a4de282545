# SPDX-License-Identifier: Apache-2.0
"""Names in a project that hold an instance of a megatron class, so that ``w.method(...)`` and ``w.attr`` can be
checked against that class (the project scan records them, check.py resolves them with ``via=INSTANCE``).

Precision over recall: a name holds an instance only where its type cannot be anything else.

- ``w = X(...)`` (or ``w: T = X(...)``) with ``X`` a megatron name, where ``w`` is bound nowhere else in the
  same scope (no second assignment, loop target, ``with``/``except`` name, import, def, ``global``/``nonlocal``);
- a parameter annotated with a megatron name (``def f(m: GPTModel)``, also ``Optional[X]``, ``X | None``, a
  ``Union`` of megatron names only, ``"X"``: ``annotated_classes``) that its function never rebinds: it may
  hold a subclass (``TransformerConfig`` subclasses add fields), so only calls of members the class has are
  checked (``via=ANNOTATED``), never a missing member;
- a parameter annotated with a project class, or ``w = P(...)`` of one (``via=PROJECT_CLASS``, the name before
  the last dot is the project class): scan_project decides once every file is read whether ``P`` is a leaf
  subclass of megatron classes (project_classes.py) and turns the use into one of those classes or drops it;
- ``self.x = X(...)`` in a class's ``__init__`` where no statement in the class stores ``x`` on any object
  again (an assignment, loop or ``with`` target, ``del``, a ``setattr`` statement; a ``setattr`` with a computed
  name: nothing is held).

Whether ``X`` is a class (and not a factory function) is decided against the candidate, in check.py.
"""
from __future__ import annotations

import ast
import re
from collections import Counter
from collections.abc import Callable

from ....annotations import type_of
from ...ast_tools import dotted, statements
from .model import init_method

INSTANCE = "instance of a megatron class"  # a Use's ``via``: the name before the last dot is the class
ANNOTATED = "annotated as a megatron class"  # the same for a parameter: it may hold a subclass, which may add members
PROJECT_CLASS = "instance of a project class"  # until scan_project resolves it: the name before the last dot is it

Resolve = Callable[[ast.AST], "tuple | None"]  # an expression -> the megatron paths it denotes (or None)
ProjectClass = Callable[[ast.AST], "str | None"]  # an expression -> the ``module.Class`` of a project class (or None)
Counts = Callable[[list, "ast.arguments | None"], Counter]  # a scope's (body, args) -> its bound_names


def bound_names(body: list, args: ast.arguments | None, walrus: bool) -> Counter:
    """How often each name is bound in one scope: assignment, loop, ``with`` and ``del`` targets, imports, defs,
    handlers, match captures, parameters and walrus targets; ``global``/``nonlocal`` names count as bound elsewhere
    too. Statements are read, and only the expressions that may bind (targets; with ``walrus``, any expression)."""
    counts: Counter = Counter()
    targets: list = []
    for arg in (args.posonlyargs + args.args + args.kwonlyargs + [args.vararg, args.kwarg]) if args else ():
        if arg is not None:
            counts[arg.arg] += 1
    for stmt in statements(body):
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            counts[stmt.name] += 1
        elif isinstance(stmt, (ast.Import, ast.ImportFrom)):
            counts.update((a.asname or a.name).split(".")[0] for a in stmt.names)
        elif isinstance(stmt, (ast.Global, ast.Nonlocal)):
            counts.update({name: 2 for name in stmt.names})
        else:
            targets += _targets(stmt)
        for handler in getattr(stmt, "handlers", None) or []:
            if handler.name:
                counts[handler.name] += 1
        for case in getattr(stmt, "cases", None) or []:
            for node in ast.walk(case.pattern):
                for attr in ("name", "rest"):
                    if isinstance(getattr(node, attr, None), str):
                        counts[getattr(node, attr)] += 1
        if walrus and not isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            fields = [v for f, v in ast.iter_fields(stmt) if f not in ("body", "orelse", "finalbody", "handlers")]
            targets += [n.target for n in walrus_in(fields)]
    for target in targets:
        _count_stores(target, counts)
    return counts


def bound_once(body: list, counts: Counter) -> dict:
    """name -> the value of ``name = value`` for each name the scope binds once (``counts``: its bound_names), by
    that statement; nested defs are their own scopes."""
    return {s.targets[0].id: s.value for s in statements(body) if isinstance(s, ast.Assign) and len(s.targets) == 1
            and isinstance(s.targets[0], ast.Name) and counts[s.targets[0].id] == 1}


def _count_stores(target, counts: Counter) -> None:
    """Count each name a target stores to or deletes, anywhere in it (a walrus, a comprehension in a subscript);
    the common shapes without a walk: a name, ``a.b.c``, ``a[k]``, a tuple of them."""
    kind = type(target)
    if kind is ast.Name:
        counts[target.id] += 1
    elif kind in (ast.Tuple, ast.List):
        for element in target.elts:
            _count_stores(element, counts)
    elif kind is ast.Starred:
        _count_stores(target.value, counts)
    elif not (kind is ast.Attribute and dotted(target.value)) and not (
            kind is ast.Subscript and dotted(target.value) and type(target.slice) in (ast.Name, ast.Constant)):
        for node in ast.walk(target):
            if isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Load):
                counts[node.id] += 1


def _targets(stmt) -> list:
    """The target expressions a statement stores to (assignment, loop, ``with ... as``, ``del``)."""
    if isinstance(stmt, (ast.Assign, ast.Delete)):
        return list(stmt.targets)
    if isinstance(stmt, (ast.AnnAssign, ast.AugAssign, ast.For, ast.AsyncFor)):
        return [stmt.target]
    if isinstance(stmt, (ast.With, ast.AsyncWith)):
        return [item.optional_vars for item in stmt.items if item.optional_vars is not None]
    return []


def walrus_in(value) -> list:
    """The ``:=`` expressions in ``value`` (a statement's own fields: nodes or lists of them), not in lambdas or
    nested statements, in the order a stack walk meets them."""
    found, stack = [], [value]
    while stack:
        node = stack.pop()
        if isinstance(node, list):
            stack.extend(node)
        elif isinstance(node, ast.NamedExpr):
            found.append(node)
            stack.append(node.value)
        elif isinstance(node, ast.AST) and not isinstance(node, (ast.Lambda, ast.stmt)):
            stack.extend(v for _f, v in ast.iter_fields(node))
    return found


def _constructed(value, resolve: Resolve) -> tuple | None:
    """``X(...)`` with ``X`` a megatron name: its paths."""
    if isinstance(value, ast.Call) and dotted(value.func):
        return resolve(value.func)
    return None


def _of_project_class(node, project: ProjectClass | None) -> tuple | None:
    """``(("module.Class",), PROJECT_CLASS)`` when ``node`` names a project class."""
    origin = project(node) if project is not None and node is not None and dotted(node) else None
    return ((origin,), PROJECT_CLASS) if origin else None


def annotated_classes(annotation) -> list:
    """The class names (expressions) an annotation allows besides None: ``X``, ``Optional[X]``, ``X | None``,
    ``Union[X, Y, None]``, ``"X"`` (read by ``compat.annotations``); [] where it allows anything else (a builtin,
    ``list[X]``, ``Any``)."""
    if annotation is None or dotted(annotation):
        return [annotation] if annotation is not None else []
    if not isinstance(annotation, (ast.Subscript, ast.BinOp, ast.Constant)):
        return []
    found = []
    for member in type_of(ast.unparse(annotation)).members:
        if member.kind == "None":
            continue
        if member.kind != "any" or not _DOTTED.fullmatch(member.name):
            return []  # a member that is no class name: the parameter may hold anything
        found.append(ast.parse(member.name, mode="eval").body)
    return found


_DOTTED = re.compile(r"[A-Za-z_]\w*(\.[A-Za-z_]\w*)*")


def scope_instances(body: list, args: ast.arguments | None, resolve: Resolve, walrus: bool = True,
                    project: ProjectClass | None = None, counts: Counts | None = None) -> dict:
    """name -> (megatron class paths, the ``via`` of its uses), for the names of one scope (a function or module
    body) that hold an instance and nothing else (``walrus``: the source has ``:=``, which may bind anywhere);
    with ``project``, also the names that hold an instance of a project class (``via=PROJECT_CLASS``); ``counts``:
    where the caller keeps each scope's bound_names."""
    found: dict[str, tuple] = {}
    params = (args.posonlyargs + args.args + args.kwonlyargs) if args is not None else []
    for arg in params:
        members = annotated_classes(arg.annotation)
        if len(members) == 1:
            paths = resolve(members[0])
            if paths:
                found[arg.arg] = paths, ANNOTATED
            elif (own := _of_project_class(members[0], project)) is not None:
                found[arg.arg] = own
        elif members:  # a Union: typed only where every member is a megatron class (any of them may be passed)
            each = [resolve(m) for m in members]
            if all(each):
                found[arg.arg] = tuple(dict.fromkeys(p for paths in each for p in paths)), ANNOTATED
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
        elif isinstance(value, ast.Call) and (own := _of_project_class(value.func, project)) is not None:
            found[name] = own
    if not found:
        return {}
    bound = counts(body, args) if counts is not None else bound_names(body, args, walrus)
    return {name: paths for name, paths in found.items() if bound[name] == 1}


def held_attributes(node: ast.ClassDef, resolve: Resolve) -> dict:
    """attr -> (megatron class paths, INSTANCE), for ``self.attr = X(...)`` in the class's ``__init__`` that nothing else in
    the class stores again."""
    init = init_method(node)
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
    for stmt in statements(node.body, into_defs=True):  # statement-level stores (and setattr statements)
        for target in _targets(stmt):
            stores.update(n.attr for n in ast.walk(target) if isinstance(n, ast.Attribute)
                          and not isinstance(n.ctx, ast.Load))
        call = stmt.value if isinstance(stmt, ast.Expr) else None
        if isinstance(call, ast.Call) and dotted(call.func) in ("setattr", "delattr"):
            name = call.args[1] if len(call.args) > 1 else None
            if not (isinstance(name, ast.Constant) and isinstance(name.value, str)):
                return {}
            stores[name.value] += 2
    return {attr: paths for attr, paths in found.items() if stores[attr] == 1}


def held_path(expr, instance_of: Callable[[str], tuple | None], self_name: str | None, held: dict) -> tuple | None:
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
