# SPDX-License-Identifier: Apache-2.0
"""What a dataclass's ``__post_init__`` reads, writes and checks, read with ``ast`` and kept as data.

The walk follows ``super().__post_init__()`` into the base classes (an inherited ``__post_init__`` is the base's)
and visits statements in program order. Every ``raise`` and ``assert`` becomes a check: the conditions of the
enclosing ``if``s (``not (...)`` on ``else`` branches; ``not (...)`` after an ``if`` whose body returns), the assert's
test, the exception and the message. A check is marked ``skip`` (never pre-checked) when it sits in a loop or a
``try``, or uses something the evaluator (``compat.evaluate``) does not understand.

Every write to a field of ``self`` becomes a write record, in the same program order: the fields it may set (None:
any, for a ``setattr`` whose target it cannot name or a method of ``self``), its conditions, the value when the
evaluator can compute it, and why it may not happen although its conditions hold (in a loop, a ``try``). The
pre-check replays them (``compat.precheck``), so a check that reads a field written before it sees the value the
real class would have there, or UNKNOWN. Positions (``at``, ``when_at``) count the writes before a check, and before
each of its conditions was evaluated: a condition is read with the values of its own moment.
"""
from __future__ import annotations

import ast
from collections.abc import Callable

from .annotations import type_of
from .evaluate import local_key, unsupported

_EXITS = (ast.Return, ast.Continue, ast.Break)


def _self_attr(node) -> str | None:
    if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "self":
        return node.attr
    return None


def _is_self(node) -> bool:
    return isinstance(node, ast.Name) and node.id == "self"


def _is_super_post_init(stmt) -> bool:
    call = stmt.value if isinstance(stmt, ast.Expr) else None
    return (isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute) and call.func.attr == "__post_init__"
            and isinstance(call.func.value, ast.Call) and isinstance(call.func.value.func, ast.Name)
            and call.func.value.func.id == "super")


_PLAIN = (ast.Attribute, ast.Name)
# calls and methods that do not change a local variable they are given (anything else may: its value is unknown)
_PURE_CALLS = {"len", "isinstance", "str", "int", "float", "bool", "any", "all", "min", "max", "abs", "repr", "sorted",
               "list", "tuple", "set", "print", "getattr", "hasattr", "type", "id", "hash", "range", "enumerate", "zip"}
_READ_METHODS = {"split", "rsplit", "get", "items", "keys", "values", "copy", "count", "index", "startswith",
                 "endswith", "strip", "lower", "upper", "format", "join", "replace", "partition", "rpartition"}
_OWN_SCOPE = (ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp, ast.Lambda)


def _assigned_values(stmt: ast.stmt) -> dict[int, ast.expr]:
    """id(target node) -> the value a plain assignment gives it (``self.x = v``, ``x = v``, ``self.x: T = v``, and
    ``self.x += v`` as ``self.x + v``); a target inside a tuple or a subscript gets none (its value is unknown)."""
    if isinstance(stmt, ast.Assign):
        return {id(t): stmt.value for t in stmt.targets if isinstance(t, _PLAIN)}
    if isinstance(stmt, ast.AnnAssign) and stmt.value is not None and isinstance(stmt.target, _PLAIN):
        return {id(stmt.target): stmt.value}
    if isinstance(stmt, ast.AugAssign) and isinstance(stmt.target, _PLAIN):
        read = ast.Name(id=stmt.target.id, ctx=ast.Load()) if isinstance(stmt.target, ast.Name) else \
            ast.Attribute(value=stmt.target.value, attr=stmt.target.attr, ctx=ast.Load())
        return {id(stmt.target): ast.BinOp(left=read, op=stmt.op, right=stmt.value)}
    return {}


def _own_scope_nodes(stmt: ast.AST) -> set[int]:
    """ids of the nodes inside a comprehension or lambda of ``stmt``: their names are not the function's locals."""
    inner: set[int] = set()
    for node in ast.walk(stmt):
        if isinstance(node, _OWN_SCOPE):
            inner.update(id(n) for n in ast.walk(node))
    return inner


def _unmodelled_names(method: ast.FunctionDef) -> set[str]:
    """Locals another function may rebind (``global`` here, ``nonlocal`` in a nested def): never modelled."""
    return {name for node in ast.walk(method) if isinstance(node, (ast.Global, ast.Nonlocal)) for name in node.names}


def post_init_method(cls: ast.ClassDef) -> ast.FunctionDef | None:
    found = None
    for item in cls.body:  # the last definition wins, as in Python
        if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)) and item.name == "__post_init__":
            found = item
    return found


# (target expression, the __post_init__ it is in, the class that defines it) -> the strings it may be, or None
TargetNames = Callable[[ast.expr, ast.FunctionDef, ast.ClassDef], "frozenset | None"]


class _Walk:
    def __init__(self, chain: list[ast.ClassDef], fields: dict[str, str], target_names: TargetNames | None = None,
                 enums: dict | None = None):
        self.chain, self.fields, self.target_names, self.enums = chain, fields, target_names, enums or {}
        self.reads: set[str] = set()
        self.writes: set[str] = set()
        self.dynamic: int | None = None  # line of the first write we cannot name
        self.checks: list[dict] = []
        self.effects: list[dict] = []  # the write records, in program order
        self._guards: list = []  # (condition, writes before it) of the statement being read
        self._context: str | None = None
        self._owner = chain[0].name if chain else ""
        self._bound: dict[str, set[str]] = {}  # class -> the locals of its __post_init__ bound so far
        self._unmodelled = {c.name: _unmodelled_names(post_init_method(c)) for c in chain}

    # ---- effects of one statement (everything in it, before its checks are recorded) -------------------------
    def _effects(self, stmt: ast.stmt, guards: list, context: str | None) -> None:
        self._guards, self._context = guards, context
        values = _assigned_values(stmt)
        inner = _own_scope_nodes(stmt)
        for node in ast.walk(stmt):
            if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store | ast.Del) and id(node) not in inner:
                self._local(node.id, node.lineno, values.get(id(node)) if isinstance(node.ctx, ast.Store) else None)
            name = _self_attr(node)
            if name is not None and isinstance(node.ctx, ast.Store | ast.Del):
                self._write(name, node.lineno, values.get(id(node)))
            elif name is not None:
                self.reads.add(name)
            if isinstance(node, ast.Subscript) and isinstance(node.ctx, ast.Store | ast.Del):
                target = _self_attr(node.value)
                if target:
                    self._write(target, node.lineno)
            if isinstance(node, ast.Call):
                self._call(node)

    def _local(self, name: str, line: int, value: ast.expr | None = None) -> None:
        """A write of local variable ``name`` (its env key: ``evaluate.local_key``)."""
        if name in self._unmodelled.get(self._owner, ()):
            return
        self._record([local_key(self._owner, name)], line, value)
        self._bound.setdefault(self._owner, set()).add(name)

    def bind(self, target: ast.expr | None, line: int) -> None:
        """The names a for, with or except binds: their values are unknown."""
        for node in ast.walk(target) if target is not None else ():
            if isinstance(node, ast.Name):
                self._local(node.id, line)

    def _call(self, node: ast.Call) -> None:
        func = node.func
        if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) and func.attr not in _READ_METHODS:
            self._local_changed(func.value.id, node.lineno)  # x.append(...): a local may change in place
        pure = isinstance(func, ast.Name) and func.id in _PURE_CALLS
        for arg in [*node.args, *(k.value for k in node.keywords)]:
            if isinstance(arg, ast.Name) and not pure:
                self._local_changed(arg.id, node.lineno)
        if isinstance(func, ast.Name) and func.id in ("setattr", "getattr", "delattr") and node.args \
                and _is_self(node.args[0]):
            attr = node.args[1] if len(node.args) > 1 else None
            const = attr.value if isinstance(attr, ast.Constant) and isinstance(attr.value, str) else None
            if func.id == "getattr":
                if const:
                    self.reads.add(const)
                return
            if const:
                self._write(const, node.lineno)
                return
            names = self._names_of(attr)
            if names is None:
                self._dynamic(node.lineno)
            else:
                self.writes.update(names)
                self._record(sorted(names), node.lineno, None)
            return
        if isinstance(func, ast.Attribute):
            if _is_self(func.value) and func.attr not in self.fields:
                if func.attr != "__post_init__":
                    self._dynamic(node.lineno)  # a method of self may set anything
            target = _self_attr(func.value)
            if target:
                self._write(target, node.lineno)  # self.x.append(...): x may change in place
        for arg in [*node.args, *(k.value for k in node.keywords)]:
            if _is_self(arg):
                self._dynamic(node.lineno)
            elif _self_attr(arg) and self._mutable(_self_attr(arg)):
                self._write(_self_attr(arg), node.lineno)  # a callee may change a mutable value in place

    def _local_changed(self, name: str, line: int) -> None:
        if name in self._bound.get(self._owner, ()):
            self._local(name, line)

    def _names_of(self, attr: ast.expr | None) -> frozenset | None:
        """The attribute names a setattr target may be, when ``target_names`` can name them all."""
        if attr is None or self.target_names is None:
            return None
        cls = next(c for c in self.chain if c.name == self._owner)
        names = self.target_names(attr, post_init_method(cls), cls)
        return None if names is None or not all(isinstance(n, str) for n in names) else names

    def _mutable(self, name: str) -> bool:
        annotation = self.fields.get(name)
        if annotation is None:
            return True
        return not type_of(annotation).kinds() <= {"None", "bool", "int", "float", "str", "literal", "dtype", "callable"}

    def _write(self, name: str, line: int, value: ast.expr | None = None) -> None:
        if name == "__dict__":  # self.__dict__.update(...), self.__dict__[k] = v: any field
            self._dynamic(line)
            return
        self.writes.add(name)
        self._record([name], line, value)

    def _dynamic(self, line: int) -> None:
        if self.dynamic is None:
            self.dynamic = line
        self._record(None, line, None)

    def _record(self, targets: list[str] | None, line: int, value: ast.expr | None) -> None:
        known = value is not None and unsupported(value, names=self._bound.get(self._owner, ()), enums=self.enums) is None
        self.effects.append({
            "targets": targets, "when": [ast.unparse(g) for g, _ in self._guards],
            "when_at": [at for _, at in self._guards], "value": ast.unparse(value) if known else None,
            "maybe": self._context, "line": line, "owner": self._owner})

    # ---- the walk --------------------------------------------------------------------------------------------
    def run(self) -> None:
        if self.chain:
            self._body(post_init_method(self.chain[0]).body, [], None, 0)

    def _guard(self, test: ast.expr) -> tuple[ast.expr, int]:
        return test, len(self.effects)

    def _body(self, body, guards: list, context: str | None, depth: int) -> None:
        guards = list(guards)
        self._owner = self.chain[depth].name
        for stmt in body:
            if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
                continue
            if _is_super_post_init(stmt):
                if depth + 1 < len(self.chain):
                    self._body(post_init_method(self.chain[depth + 1]).body, guards, context, depth + 1)
                    self._owner = self.chain[depth].name
                continue
            if isinstance(stmt, ast.If):
                self._effects_of(stmt.test, guards, context)
                test = self._guard(stmt.test)
                negated = (ast.UnaryOp(ast.Not(), stmt.test), test[1])
                self._body(stmt.body, guards + [test], context, depth)
                self._body(stmt.orelse, guards + [negated], context, depth)
                if stmt.body and isinstance(stmt.body[-1], _EXITS):
                    guards.append(negated)  # what follows runs only when the test was false
                elif stmt.orelse and isinstance(stmt.orelse[-1], _EXITS):
                    guards.append(test)
                continue
            if isinstance(stmt, (ast.For, ast.AsyncFor)):
                self._effects_of(stmt.iter, guards, context)
                self._guards, self._context = guards, "in a loop"
                self.bind(stmt.target, stmt.lineno)
                self._body(stmt.body, guards, "in a loop", depth)
                self._body(stmt.orelse, guards, "in a loop", depth)
                continue
            if isinstance(stmt, ast.While):
                self._effects_of(stmt.test, guards, "in a loop")
                self._body(stmt.body, guards, "in a loop", depth)
                self._body(stmt.orelse, guards, "in a loop", depth)
                continue
            if isinstance(stmt, ast.Try) or type(stmt).__name__ == "TryStar":
                self._body(stmt.body, guards, "in a try block", depth)
                for handler in stmt.handlers:
                    if handler.name:
                        self._guards, self._context = guards, "in an except handler"
                        self._local(handler.name, handler.lineno)
                    self._body(handler.body, guards, "in an except handler", depth)
                self._body(stmt.orelse, guards, "in a try block", depth)
                self._body(stmt.finalbody, guards, context, depth)
                continue
            if isinstance(stmt, (ast.With, ast.AsyncWith)):
                for item in stmt.items:
                    self._effects_of(item.context_expr, guards, context)
                    self._guards, self._context = guards, context
                    self.bind(item.optional_vars, stmt.lineno)
                self._body(stmt.body, guards, context, depth)
                continue
            if isinstance(stmt, ast.Match):
                self._effects_of(stmt.subject, guards, context)
                for case in stmt.cases:
                    self._guards, self._context = guards, "in a match statement"
                    for node in ast.walk(case.pattern):
                        for captured in (getattr(node, "name", None), getattr(node, "rest", None)):
                            if isinstance(captured, str):
                                self._local(captured, stmt.lineno)
                    self._body(case.body, guards, "in a match statement", depth)
                continue
            self._effects(stmt, guards, context)
            if isinstance(stmt, ast.Raise):
                self._check("raise", stmt, guards, None, stmt.exc, context)
            elif isinstance(stmt, ast.Assert):
                self._check("assert", stmt, guards, stmt.test, stmt.msg, context)
            if isinstance(stmt, (ast.Return, ast.Raise)):
                return  # the rest of this block is unreachable

    def _effects_of(self, expr, guards: list, context: str | None) -> None:
        if expr is not None:
            self._effects(ast.Expr(expr), guards, context)

    def _check(self, kind, stmt, guards, test, exc_or_msg, context) -> None:
        exception, message = "AssertionError", exc_or_msg
        if kind == "raise":
            exc = exc_or_msg
            if exc is None:
                exception, message = "(re-raise)", None
            else:
                func = exc.func if isinstance(exc, ast.Call) else exc
                exception = ast.unparse(func)
                message = exc.args[0] if isinstance(exc, ast.Call) and exc.args else None
        when = [ast.unparse(g) for g, _ in guards]
        exprs = [*(g for g, _ in guards), *([test] if test is not None else [])]
        reads = sorted({n for e in exprs for node in ast.walk(e) if (n := _self_attr(node)) is not None})
        skip = context
        if skip is None and kind == "raise" and exception == "(re-raise)":
            skip = "a bare re-raise"
        if skip is None:
            for e in exprs:
                why = unsupported(e, names=self._bound.get(self._owner, ()), enums=self.enums)
                if why:
                    skip = f"uses {why}"
                    break
        self.checks.append({
            "kind": kind, "exception": exception, "when": when,
            "test": ast.unparse(test) if test is not None else None,
            "message": ast.unparse(message) if message is not None else None,
            "reads": reads, "skip": skip, "line": stmt.lineno, "owner": self._owner,
            "at": len(self.effects), "when_at": [at for _, at in guards]})


def post_init_facts(chain: list[ast.ClassDef], fields: dict[str, str], target_names: TargetNames | None = None,
                    enums: dict | None = None) -> dict:
    """Reads, writes and checks of the ``__post_init__`` that runs for a class whose MRO is ``chain``.

    ``chain`` holds the classes of the MRO (most derived first); only those defining ``__post_init__`` matter.
    ``fields`` maps each dataclass field to its annotation (a callee cannot change an int it is given).
    ``effects`` are the write records (see the module docstring); a check's ``at`` and ``when_at`` index them.
    ``target_names``: what names the target of a ``setattr(self, name, v)`` when ``name`` is no constant (the
    tooling reads the release's modules for it); without it, such a write may set any field. ``enums``: the Enum
    classes whose members the checks may name (``compat.evaluate.EnumMember``), kept with the facts.
    """
    with_method = [c for c in chain if post_init_method(c) is not None]
    walk = _Walk(with_method, fields, target_names, enums)
    walk.run()
    return {"reads": sorted(walk.reads & fields.keys()), "writes": sorted(walk.writes & fields.keys()),
            "dynamic_writes": walk.dynamic is not None, "checks": walk.checks, "effects": _field_writes(walk, fields),
            "enums": dict(sorted((enums or {}).items()))}


def _field_writes(walk: _Walk, fields: dict) -> list[dict]:
    """The write records restricted to dataclass fields and locals (``Owner.name``); a write of another attribute
    (``self._cache``) stays, with no targets, so that the positions of the checks keep counting it."""
    return [{**w, "targets": None if w["targets"] is None else [t for t in w["targets"] if t in fields or "." in t]}
            for w in walk.effects]


__all__ = ["post_init_facts", "post_init_method"]
