# SPDX-License-Identifier: Apache-2.0
"""What a dataclass's ``__post_init__`` reads, writes and checks, read with ``ast`` and kept as data.

The walk follows ``super().__post_init__()`` into the base classes (an inherited ``__post_init__`` is the base's)
and visits statements in program order. Every ``raise`` and ``assert`` becomes a check: the conditions of the
enclosing ``if``s (``not (...)`` on ``else`` branches; ``not (...)`` after an ``if`` whose body returns), the assert's
test, the exception and the message. A check is marked ``skip`` (never pre-checked) when it sits in a loop or a
``try``, follows a write whose target is not a constant name, reads a field that ``__post_init__`` may set before
it, or uses something the evaluator (``compat.evaluate``) does not understand.
"""
from __future__ import annotations

import ast

from .annotations import type_of
from .evaluate import unsupported

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


def post_init_method(cls: ast.ClassDef) -> ast.FunctionDef | None:
    found = None
    for item in cls.body:  # the last definition wins, as in Python
        if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)) and item.name == "__post_init__":
            found = item
    return found


class _Walk:
    def __init__(self, chain: list[ast.ClassDef], fields: dict[str, str]):
        self.chain, self.fields = chain, fields
        self.reads: set[str] = set()
        self.writes: set[str] = set()
        self.written: dict[str, int] = {}  # field -> line of the first write seen so far (program order)
        self.dynamic: int | None = None  # line of the first write we cannot name
        self.checks: list[dict] = []

    # ---- effects of one statement (everything in it, before its checks are recorded) -------------------------
    def _effects(self, stmt: ast.stmt) -> None:
        for node in ast.walk(stmt):
            name = _self_attr(node)
            if name is not None and isinstance(node.ctx, ast.Store | ast.Del):
                self._write(name, node.lineno)
            elif name is not None:
                self.reads.add(name)
            if isinstance(node, ast.Subscript) and isinstance(node.ctx, ast.Store | ast.Del):
                target = _self_attr(node.value)
                if target:
                    self._write(target, node.lineno)
            if isinstance(node, ast.Call):
                self._call(node)

    def _call(self, node: ast.Call) -> None:
        func = node.func
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
            else:
                self._dynamic(node.lineno)
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

    def _mutable(self, name: str) -> bool:
        annotation = self.fields.get(name)
        if annotation is None:
            return True
        return not type_of(annotation).kinds() <= {"None", "bool", "int", "float", "str", "literal", "dtype", "callable"}

    def _write(self, name: str, line: int) -> None:
        self.writes.add(name)
        self.written.setdefault(name, line)

    def _dynamic(self, line: int) -> None:
        if self.dynamic is None:
            self.dynamic = line

    # ---- the walk --------------------------------------------------------------------------------------------
    def run(self) -> None:
        if self.chain:
            self._body(post_init_method(self.chain[0]).body, [], None, 0)

    def _body(self, body, guards: list, context: str | None, depth: int) -> None:
        guards = list(guards)
        for stmt in body:
            if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
                continue
            if _is_super_post_init(stmt):
                if depth + 1 < len(self.chain):
                    self._body(post_init_method(self.chain[depth + 1]).body, guards, context, depth + 1)
                continue
            if isinstance(stmt, ast.If):
                self._effects_of(stmt.test)
                self._body(stmt.body, guards + [stmt.test], context, depth)
                negated = ast.UnaryOp(ast.Not(), stmt.test)
                self._body(stmt.orelse, guards + [negated], context, depth)
                if stmt.body and isinstance(stmt.body[-1], _EXITS):
                    guards.append(negated)  # what follows runs only when the test was false
                elif stmt.orelse and isinstance(stmt.orelse[-1], _EXITS):
                    guards.append(stmt.test)
                continue
            if isinstance(stmt, (ast.For, ast.AsyncFor, ast.While)):
                self._effects_of(stmt.iter if isinstance(stmt, (ast.For, ast.AsyncFor)) else stmt.test)
                self._body(stmt.body, guards, "in a loop", depth)
                self._body(stmt.orelse, guards, "in a loop", depth)
                continue
            if isinstance(stmt, ast.Try) or type(stmt).__name__ == "TryStar":
                self._body(stmt.body, guards, "in a try block", depth)
                for handler in stmt.handlers:
                    self._body(handler.body, guards, "in an except handler", depth)
                self._body(stmt.orelse, guards, "in a try block", depth)
                self._body(stmt.finalbody, guards, context, depth)
                continue
            if isinstance(stmt, (ast.With, ast.AsyncWith)):
                for item in stmt.items:
                    self._effects_of(item.context_expr)
                self._body(stmt.body, guards, context, depth)
                continue
            if isinstance(stmt, ast.Match):
                self._effects_of(stmt.subject)
                for case in stmt.cases:
                    self._body(case.body, guards, "in a match statement", depth)
                continue
            self._effects(stmt)
            owner = self.chain[depth].name
            if isinstance(stmt, ast.Raise):
                self._check("raise", stmt, guards, None, stmt.exc, context, owner)
            elif isinstance(stmt, ast.Assert):
                self._check("assert", stmt, guards, stmt.test, stmt.msg, context, owner)
            if isinstance(stmt, (ast.Return, ast.Raise)):
                return  # the rest of this block is unreachable

    def _effects_of(self, expr) -> None:
        if expr is not None:
            self._effects(ast.Expr(expr))

    def _check(self, kind, stmt, guards, test, exc_or_msg, context, owner) -> None:
        exception, message = "AssertionError", exc_or_msg
        if kind == "raise":
            exc = exc_or_msg
            if exc is None:
                exception, message = "(re-raise)", None
            else:
                func = exc.func if isinstance(exc, ast.Call) else exc
                exception = ast.unparse(func)
                message = exc.args[0] if isinstance(exc, ast.Call) and exc.args else None
        when = [ast.unparse(g) for g in guards]
        exprs = [*guards, *([test] if test is not None else [])]
        reads = sorted({n for e in exprs for node in ast.walk(e) if (n := _self_attr(node)) is not None})
        skip = context
        if skip is None and kind == "raise" and exception == "(re-raise)":
            skip = "a bare re-raise"
        if skip is None and self.dynamic is not None:
            skip = "follows a write whose target it cannot name"
        if skip is None:
            early = sorted((self.written[n], n) for n in reads if n in self.written)
            if early:
                skip = f"reads {early[0][1]}, which __post_init__ may set before it"
        if skip is None:
            for e in exprs:
                why = unsupported(e)
                if why:
                    skip = f"uses {why}"
                    break
        self.checks.append({
            "kind": kind, "exception": exception, "when": when,
            "test": ast.unparse(test) if test is not None else None,
            "message": ast.unparse(message) if message is not None else None,
            "reads": reads, "skip": skip, "line": stmt.lineno, "owner": owner})


def post_init_facts(chain: list[ast.ClassDef], fields: dict[str, str]) -> dict:
    """Reads, writes and checks of the ``__post_init__`` that runs for a class whose MRO is ``chain``.

    ``chain`` holds the classes of the MRO (most derived first); only those defining ``__post_init__`` matter.
    ``fields`` maps each dataclass field to its annotation (a callee cannot change an int it is given).
    """
    with_method = [c for c in chain if post_init_method(c) is not None]
    walk = _Walk(with_method, fields)
    walk.run()
    return {"reads": sorted(walk.reads & fields.keys()), "writes": sorted(walk.writes & fields.keys()),
            "dynamic_writes": walk.dynamic is not None, "checks": walk.checks}


__all__ = ["post_init_facts", "post_init_method"]
