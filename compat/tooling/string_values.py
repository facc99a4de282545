# SPDX-License-Identifier: Apache-2.0
"""The strings an expression can evaluate to, when every one of them comes from a constant, read with ``ast``.

It names the fields a ``setattr(self, attr, value)`` of ``__post_init__`` may write when ``attr`` flows from
constants: a literal, a tuple or a dict of them at module level, a loop over one, a function of the release's own
modules that returns them (its parameters bound to the arguments of the call). Values are abstract:

- ``Strs``: one of these strings (an empty set: no string; a value that is not a str adds none, as setattr would
  raise on it),
- ``Tup``: a tuple or list of known length, item by item; ``Seq``: a container, the join of its items;
  ``Map``: a dict, the join of its keys and of its values,
- ``TOP``: anything.

Every binding of a name in a function counts (the analysis is flow-insensitive, so a join of all of them), and a
container a function builds is trusted only when it cannot change behind the analysis' back: each use of the name
must read it (iterate, index, compare, return it, call a non-mutating method or a function that does not let it
escape); any other use (an alias, a mutating method, a store into it, an unknown call) makes it TOP. Anything it
does not understand is TOP, and TOP means "cannot name the targets": the caller then treats the write as one of any
field. Depth and work are bounded.
"""
from __future__ import annotations

import ast
from collections.abc import Callable
from dataclasses import dataclass
from functools import reduce


class _Top:
    def __repr__(self):
        return "TOP"


TOP = _Top()


@dataclass(frozen=True)
class Strs:
    values: frozenset


@dataclass(frozen=True)
class Tup:
    items: tuple


@dataclass(frozen=True)
class Seq:
    item: object


@dataclass(frozen=True)
class Map:
    key: object
    value: object


NONE = Strs(frozenset())
MAX_DEPTH = 24  # names and calls followed, one inside another, from one expression
MAX_STEPS = 200_000  # values computed for all the questions about one candidate

_ADDS = {"append", "add", "insert", "extend"}  # a method that puts its argument into the container
_READS = {"split", "rsplit", "strip", "lower", "upper", "startswith", "endswith", "get", "items", "keys", "values",
          "copy", "count", "index", "join", "format", "replace", "partition", "rpartition"}
_PURE = {"len", "list", "tuple", "set", "frozenset", "sorted", "isinstance", "str", "repr", "print", "any", "all",
         "enumerate", "zip", "sum", "min", "max", "bool", "int", "float", "getattr", "hasattr", "iter", "reversed"}
_LOGGERS = {"warn", "warning", "info", "debug", "error", "log", "log_single_rank"}


def join(a, b):
    if a is TOP or b is TOP:
        return TOP
    if a == NONE:
        return b
    if b == NONE:
        return a
    if isinstance(a, Strs) and isinstance(b, Strs):
        return Strs(a.values | b.values)
    if isinstance(a, Tup) and isinstance(b, Tup) and len(a.items) == len(b.items):
        return Tup(tuple(join(x, y) for x, y in zip(a.items, b.items)))
    if isinstance(a, (Tup, Seq)) and isinstance(b, (Tup, Seq)):
        return Seq(join(element(a), element(b)))
    if isinstance(a, Map) and isinstance(b, Map):
        return Map(join(a.key, b.key), join(a.value, b.value))
    return TOP


def element(v):
    """What iterating ``v`` gives."""
    if isinstance(v, Tup):
        return reduce(join, v.items, NONE)
    if isinstance(v, Seq):
        return v.item
    if isinstance(v, Map):
        return v.key
    return NONE if v == NONE else TOP


def _index(v, key: ast.expr):
    if isinstance(v, Tup):
        if isinstance(key, ast.Constant) and type(key.value) is int and -len(v.items) <= key.value < len(v.items):
            return v.items[key.value]
        return element(v)
    if isinstance(v, Seq):
        return v.item
    if isinstance(v, Map):
        return v.value
    return NONE if v == NONE else TOP


def _unpack(v, n: int) -> list:
    if isinstance(v, Tup) and len(v.items) == n:
        return list(v.items)
    if isinstance(v, (Tup, Seq)):
        return [element(v)] * n
    return [NONE if v == NONE else TOP] * n


@dataclass(frozen=True)
class Scope:
    """Where a name is looked up: a function of a module (None: the module's top level), with the arguments of the
    call that entered it (None: unknown callers)."""

    path: str
    function: ast.FunctionDef | None = None
    args: dict | None = None  # parameter -> (argument expression, the caller's Scope)


class StringValues:
    """``modules(path)`` gives the parsed module at a wheel path (``megatron/core/x.py``) or None."""

    def __init__(self, modules: Callable[[str], ast.Module | None]):
        self._modules = modules
        self._facts: dict[int, dict] = {}
        self._steps = 0

    def strings(self, node: ast.expr, scope: Scope) -> frozenset | None:
        """The strings ``node`` may evaluate to in ``scope``, or None when it cannot name them all. The steps are
        counted over every question asked of this instance (one candidate's extraction)."""
        v = self._value(node, scope, 0)
        return v.values if isinstance(v, Strs) else None

    # ---- values -----------------------------------------------------------------------------------------------
    def _value(self, node: ast.expr, scope: Scope, depth: int):
        self._steps += 1
        if depth > MAX_DEPTH or self._steps > MAX_STEPS:
            return TOP
        if isinstance(node, ast.Constant):
            return Strs(frozenset([node.value])) if isinstance(node.value, str) else NONE
        if isinstance(node, (ast.Tuple, ast.List)):
            if any(isinstance(e, ast.Starred) for e in node.elts):
                return TOP
            return Tup(tuple(self._value(e, scope, depth) for e in node.elts))
        if isinstance(node, ast.Dict):
            if any(k is None for k in node.keys):
                return TOP
            keys = [self._value(k, scope, depth) for k in node.keys]
            values = [self._value(v, scope, depth) for v in node.values]
            return Map(reduce(join, keys, NONE), reduce(join, values, NONE))
        if isinstance(node, ast.Name):
            return self._name(node.id, scope, depth + 1)
        if isinstance(node, ast.Subscript):
            return _index(self._value(node.value, scope, depth), node.slice)
        if isinstance(node, ast.IfExp):
            return join(self._value(node.body, scope, depth), self._value(node.orelse, scope, depth))
        if isinstance(node, ast.BoolOp):
            return reduce(join, (self._value(v, scope, depth) for v in node.values), NONE)
        if isinstance(node, ast.Call):
            return self._call(node, scope, depth + 1)
        return TOP

    def _call(self, node: ast.Call, scope: Scope, depth: int):
        if isinstance(node.func, ast.Name) and node.func.id in ("list", "tuple") and len(node.args) == 1 \
                and not node.keywords and self._local_function(node.func.id, scope) is None:
            return Seq(element(self._value(node.args[0], scope, depth)))
        found = self._local_function(node.func.id, scope) if isinstance(node.func, ast.Name) else None
        if found is None:
            return TOP
        fn, path = found
        args = _bind(fn, node, scope, path)
        if args is None:
            return TOP
        inner = Scope(path, fn, args)
        returns = [r.value for r in _own_nodes(fn) if isinstance(r, ast.Return)]
        return reduce(join, (NONE if r is None else self._value(r, inner, depth) for r in returns), NONE)

    def _name(self, name: str, scope: Scope, depth: int):
        if scope.function is not None:
            facts = self._function_facts(scope.function)
            if name in facts["unknown"]:
                return TOP
            bound = facts["bindings"].get(name)
            if name in facts["params"]:
                given = scope.args.get(name) if scope.args is not None else None
                if given is None:
                    return TOP
                v = self._value(given[0], given[1], depth)
                return v if bound is None else join(v, self._bindings(bound, scope, depth))
            if bound is not None:
                v = self._bindings(bound, scope, depth)
                if isinstance(v, Strs):  # a str cannot change; only a container can, through another use
                    return v
                return TOP if self._escapes(facts, name, scope, depth) else v
        return self._global(name, scope.path, depth)

    def _escapes(self, facts: dict, name: str, scope: Scope, depth: int, param: bool = False) -> bool:
        """Whether a use of ``name`` may change its container: a hard escape, or an argument of a call to a function
        that lets the matching parameter escape (or that it cannot find). ``param``: ``name`` is a parameter, and
        adding to it changes the caller's container."""
        for use in facts["uses"].get(name, ()):
            if use == "adds":
                if param:
                    return True
                continue
            if use is True:
                return True
            call, key = use
            found = self._local_function(call.func.id, scope) if isinstance(call.func, ast.Name) else None
            if found is None or depth > MAX_DEPTH:
                return True
            fn = found[0]
            positional = [p.arg for p in (*fn.args.posonlyargs, *fn.args.args)]
            param = positional[key] if isinstance(key, int) and key < len(positional) else key
            if not isinstance(param, str) or param not in {p.arg for p in _params(fn)} or fn.args.vararg or \
                    fn.args.kwarg or self._escapes(self._function_facts(fn), param, Scope(found[1], fn), depth + 1, True):
                return True
        return False

    def _bindings(self, bound: list, scope: Scope, depth: int):
        out = NONE
        for kind, node, steps in bound:
            if kind == "top":
                return TOP
            if kind == "assign":
                v = self._value(node, scope, depth)
            elif kind == "for":
                v = element(self._value(node, scope, depth))
            elif kind == "add":
                v = Seq(self._value(node, scope, depth))
            else:  # "extend"
                v = Seq(element(self._value(node, scope, depth)))
            for i, n in steps:
                v = _unpack(v, n)[i]
            out = join(out, v)
            if out is TOP:
                return TOP
        return out

    def _global(self, name: str, path: str, depth: int):
        tree = self._modules(path)
        if tree is None:
            return TOP
        out, seen = NONE, False
        for stmt in _top_level(tree):
            if isinstance(stmt, ast.ImportFrom):
                for alias in stmt.names:
                    if (alias.asname or alias.name) == name:
                        target = module_path(stmt, path)
                        out, seen = join(out, TOP if target is None else self._global(alias.name, target, depth + 1)), True
            elif isinstance(stmt, (ast.Assign, ast.AnnAssign)):
                targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
                for t in targets:
                    if isinstance(t, ast.Name) and t.id == name and stmt.value is not None:
                        out, seen = join(out, self._value(stmt.value, Scope(path), depth + 1)), True
                    elif any(isinstance(n, ast.Name) and n.id == name for n in ast.walk(t)):
                        return TOP
            elif any(isinstance(n, ast.Name) and n.id == name and isinstance(n.ctx, ast.Store)
                     for n in ast.walk(stmt)) or _defines(stmt, name):
                return TOP
        return out if seen else TOP

    def _local_function(self, name: str, scope: Scope, depth: int = 0):
        """(def, its module path) for a name bound, at module level, to a def of the release's own modules."""
        if scope.function is not None and name in self._function_facts(scope.function)["all_bound"]:
            return None
        tree = self._modules(scope.path)
        if tree is None or depth > MAX_DEPTH:
            return None
        found = None
        for stmt in _top_level(tree):
            if isinstance(stmt, ast.FunctionDef) and stmt.name == name:
                found = (stmt, scope.path)
            elif isinstance(stmt, ast.ImportFrom) and any((a.asname or a.name) == name for a in stmt.names):
                alias = next(a for a in stmt.names if (a.asname or a.name) == name)
                target = module_path(stmt, scope.path)
                found = None if target is None else self._local_function(alias.name, Scope(target), depth + 1)
            elif _binds(stmt, name):
                found = None
        return found

    # ---- what a function binds ------------------------------------------------------------------------------
    def _function_facts(self, fn: ast.FunctionDef) -> dict:
        if id(fn) not in self._facts:
            self._facts[id(fn)] = _facts_of(fn)
        return self._facts[id(fn)]


def _params(fn: ast.FunctionDef) -> list[ast.arg]:
    a = fn.args
    return [*a.posonlyargs, *a.args, *a.kwonlyargs, *([a.vararg] if a.vararg else []), *([a.kwarg] if a.kwarg else [])]


def _bind(fn: ast.FunctionDef, call: ast.Call, scope: Scope, path: str) -> dict | None:
    """Parameter -> (argument or default, its scope); None for a call it cannot map (``*args``, ``**kw``)."""
    a = fn.args
    if a.vararg or a.kwarg or any(isinstance(x, ast.Starred) for x in call.args) or \
            any(k.arg is None for k in call.keywords):
        return None
    positional = [*a.posonlyargs, *a.args]
    if len(call.args) > len(positional):
        return None
    out = {p.arg: (arg, scope) for p, arg in zip(positional, call.args)}
    for k in call.keywords:
        out[k.arg] = (k.value, scope)
    defaults = dict(zip([p.arg for p in positional][len(positional) - len(a.defaults):], a.defaults))
    defaults.update({p.arg: d for p, d in zip(a.kwonlyargs, a.kw_defaults) if d is not None})
    definition = Scope(path)  # a default is evaluated where the def is
    for p in _params(fn):
        if p.arg not in out and p.arg in defaults:
            out[p.arg] = (defaults[p.arg], definition)
    return out


def _own_nodes(fn: ast.FunctionDef):
    """The nodes of ``fn``'s body, not those of nested functions, classes and lambdas."""
    stack = list(fn.body)
    while stack:
        node = stack.pop()
        yield node
        for child in ast.iter_child_nodes(node):
            if not isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
                stack.append(child)


def _targets(target: ast.expr, steps: list) -> list:
    """(name, unpack steps) for each name an assignment target binds; a starred or attribute part: (name, None)."""
    if isinstance(target, ast.Name):
        return [(target.id, steps)]
    if isinstance(target, (ast.Tuple, ast.List)):
        if any(isinstance(e, ast.Starred) for e in target.elts):
            return [(n.id, None) for n in ast.walk(target) if isinstance(n, ast.Name)]
        out = []
        for i, e in enumerate(target.elts):
            out += _targets(e, [*steps, (i, len(target.elts))])
        return out
    return []


def _facts_of(fn: ast.FunctionDef) -> dict:
    params = {p.arg for p in _params(fn)}
    bindings: dict[str, list] = {}
    unknown: set[str] = set()

    def bind(name, kind, node, steps):
        if steps is None:
            unknown.add(name)
        else:
            bindings.setdefault(name, []).append((kind, node, steps))

    parents = {}
    for node in _own_nodes(fn):
        for child in ast.iter_child_nodes(node):
            parents[id(child)] = node
        if isinstance(node, (ast.Global, ast.Nonlocal)):
            unknown.update(node.names)
        elif isinstance(node, ast.Assign):
            for t in node.targets:
                for name, steps in _targets(t, []):
                    bind(name, "assign", node.value, steps)
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            bind(node.target.id, "assign", node.value, []) if node.value is not None else None
        elif isinstance(node, (ast.For, ast.AsyncFor)):
            for name, steps in _targets(node.target, []):
                bind(name, "for", node.iter, steps)
        elif isinstance(node, ast.NamedExpr):
            bind(node.target.id, "assign", node.value, [])
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and \
                isinstance(node.func.value, ast.Name) and node.func.attr in _ADDS and node.args:
            bind(node.func.value.id, "extend" if node.func.attr == "extend" else "add", node.args[-1], [])
    for node in _own_nodes(fn):  # every other way of binding a name: unknown
        if isinstance(node, ast.Name) and isinstance(node.ctx, (ast.Store, ast.Del)) and node.id not in bindings:
            unknown.add(node.id)
        elif isinstance(node, (ast.AugAssign,)) and isinstance(node.target, ast.Name):
            unknown.add(node.target.id)
        elif isinstance(node, ast.ExceptHandler) and node.name:
            unknown.add(node.name)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            unknown.update((a.asname or a.name).split(".")[0] for a in node.names)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            unknown.add(node.name)
    for node in _own_nodes(fn):  # names bound only in a comprehension are its own; with-as, match: unknown
        if isinstance(node, (ast.With, ast.AsyncWith)):
            for item in node.items:
                if item.optional_vars is not None:
                    unknown.update(n.id for n in ast.walk(item.optional_vars) if isinstance(n, ast.Name))
        elif isinstance(node, ast.match_case):
            unknown.update(n for n in _match_names(node.pattern))
    uses: dict[str, list] = {}
    for node in _own_nodes(fn):
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load) and (node.id in bindings or node.id in params):
            use = _use(node, parents)
            if use is not False:
                uses.setdefault(node.id, []).append(use)
    return {"params": params, "bindings": bindings, "unknown": unknown, "uses": uses,
            "all_bound": params | set(bindings) | unknown}


def _match_names(pattern) -> list[str]:
    return [n for node in ast.walk(pattern) for n in (getattr(node, "name", None), getattr(node, "rest", None))
            if isinstance(n, str)]


def _use(name: ast.Name, parents: dict):
    """How this use of a name may change its container: False (it only reads it), True (it may), "adds" (an
    append, add, insert or extend on it), or
    (call, argument position or keyword) for an argument of a call the caller resolves (see the module docstring)."""
    parent = parents.get(id(name))
    if isinstance(parent, (ast.For, ast.AsyncFor, ast.comprehension)):
        return parent.target is name
    if isinstance(parent, ast.Subscript):
        return parent.value is name and not isinstance(parent.ctx, ast.Load)
    if isinstance(parent, (ast.Compare, ast.Return, ast.FormattedValue, ast.BoolOp, ast.UnaryOp, ast.If, ast.IfExp,
                           ast.Assert, ast.Expr, ast.While)):
        return False
    if isinstance(parent, ast.Attribute):
        call = parents.get(id(parent))
        if isinstance(call, ast.Call) and call.func is parent and parent.attr in _ADDS:
            return "adds"  # a binding of the name itself; in a callee, a change of the caller's container
        return not (isinstance(call, ast.Call) and call.func is parent and parent.attr in _READS)
    if isinstance(parent, ast.keyword):
        call = parents.get(id(parent))
        return (call, parent.arg) if isinstance(call, ast.Call) and parent.arg else True
    if isinstance(parent, ast.Call):
        func = parent.func
        if name is func:
            return True
        short = func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else None
        if short in _PURE or short in _LOGGERS:
            return False
        return (parent, parent.args.index(name)) if isinstance(func, ast.Name) and name in parent.args else True
    if isinstance(parent, ast.Tuple):
        return not isinstance(parents.get(id(parent)), ast.Return)
    if isinstance(parent, ast.Assign) and parent.value is name:  # a, b = x reads its items; y = x is an alias
        return not all(isinstance(t, (ast.Tuple, ast.List)) for t in parent.targets)
    return True


def _top_level(tree: ast.Module):
    """Module-level statements, those inside a top-level if/try included (a name bound there counts)."""
    stack = list(reversed(tree.body))
    while stack:
        stmt = stack.pop()
        if isinstance(stmt, (ast.If, ast.Try)) or type(stmt).__name__ == "TryStar":
            inner = [*stmt.body, *stmt.orelse, *getattr(stmt, "finalbody", []),
                     *(s for h in getattr(stmt, "handlers", []) for s in h.body)]
            stack.extend(reversed(inner))
        else:
            yield stmt


def _defines(stmt: ast.stmt, name: str) -> bool:
    return isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and stmt.name == name or \
        isinstance(stmt, ast.Import) and any((a.asname or a.name).split(".")[0] == name for a in stmt.names)


def _binds(stmt: ast.stmt, name: str) -> bool:
    return _defines(stmt, name) or any(isinstance(n, ast.Name) and n.id == name and isinstance(n.ctx, ast.Store)
                                       for n in ast.walk(stmt))


def module_path(stmt: ast.ImportFrom, path: str) -> str | None:
    """The wheel path of the module a ``from X import`` names, relative imports resolved against ``path``."""
    if stmt.level:
        package = path.split("/")[:-1]
        if stmt.level - 1 > len(package):
            return None
        base = package[:len(package) - (stmt.level - 1)]
        parts = base + (stmt.module.split(".") if stmt.module else [])
    elif stmt.module:
        parts = stmt.module.split(".")
    else:
        return None
    return "/".join(parts) + ".py"


__all__ = ["Map", "Scope", "Seq", "StringValues", "Strs", "TOP", "Tup", "element", "join", "module_path"]
