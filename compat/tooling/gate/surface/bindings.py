# SPDX-License-Identifier: Apache-2.0
"""The names one scope of a project file binds (a function, a class body or the module): megatron paths, or None
where a local shadows them.

A statement directly in the body (not under ``if``/``try``) rebinds: ``mpu = Other()`` after ``from megatron.core
import mpu`` shadows the import, as does a rebinding after ``del mpu``; branches bind the union (``try: from
megatron... import X / except ImportError: X = None``). ``from project_module import name`` binds what that module
exports (the re-exports the scan follows), and records that the file asked for it.
"""
from __future__ import annotations

import ast

from ...ast_tools import COMPOUND, DEFS, dotted
from .definitions import is_megatron, is_none
from .instances import walrus_in

_BLOCKS = {"body", "orelse", "finalbody", "handlers", "cases"}
_NESTING = COMPOUND - DEFS  # statements with blocks of the same scope
_DEFINITIONS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)


def scope_bindings(scan, body: list, params) -> dict:
    """name -> megatron paths (or None) of the scope whose statements are ``body`` and whose parameters are
    ``params``; ``scan`` (the file's scanner) resolves names of the scopes around it and collects star imports."""
    binder = _Binder(scan, params)
    binder.walk(body, True)
    return binder.scope


class _Binder:
    def __init__(self, scan, params):
        self.scan = scan
        self.scope: dict = {p: None for p in params}
        self.declared_global: set = set()
        self.deleted: set = set()

    def bind(self, name, value, top=False) -> None:
        scope = self.scope
        if top or name in self.deleted:
            scope[name] = value or None
            self.deleted.discard(name)
        elif value:
            scope[name] = tuple(dict.fromkeys((scope.get(name) or ()) + value))
        elif name not in scope:
            scope[name] = None

    def target(self, t, value=None, top=False) -> None:
        if isinstance(t, ast.Name) and t.id not in self.declared_global:
            bound = None
            chain = dotted(value) if value is not None else None
            if chain:
                root, _, rest = chain.partition(".")
                base = self.scope.get(root) if root in self.scope else self.scan.lookup(root)
                bound = tuple(p + ("." + rest if rest else "") for p in base) if base else None
            self.bind(t.id, bound, top and not is_none(value))
        elif isinstance(t, (ast.Tuple, ast.List)):
            for e in t.elts:
                self.target(e.value if isinstance(e, ast.Starred) else e, top=top)

    def expressions(self, s, top) -> None:
        """Walrus targets in a statement's own expressions (not in nested defs or lambdas); the test of an ``if``
        directly in the body always runs, so its walrus rebinds."""
        for node in walrus_in([v for f, v in ast.iter_fields(s) if f not in _BLOCKS]):
            self.target(node.target, node.value, top)

    def walk(self, stmts, top) -> None:
        walrus = self.scan.file.walrus
        for s in stmts:
            kind = type(s)
            if walrus and kind not in DEFS:
                self.expressions(s, top)
            visit = _STATEMENTS.get(kind)
            if visit is not None:
                visit(self, s, top)
            if kind in _NESTING:
                self.nested(s, top)

    def nested(self, s, top) -> None:
        for child in ("body", "orelse", "finalbody"):
            self.walk(getattr(s, child, []) or [], top and isinstance(s, (ast.With, ast.AsyncWith)))
        for handler in getattr(s, "handlers", []) or []:
            if handler.name:
                self.bind(handler.name, None)
            self.walk(handler.body, False)
        for case in getattr(s, "cases", []) or []:
            for node in ast.walk(case.pattern):
                for name in (getattr(node, "name", None), getattr(node, "rest", None)):
                    if isinstance(name, str):
                        self.bind(name, None, True)  # a capture: what the case body sees
            self.walk(case.body, False)

    def global_(self, s, top) -> None:
        self.declared_global.update(s.names)

    def delete(self, s, top) -> None:
        self.deleted.update(t.id for t in s.targets if isinstance(t, ast.Name))

    def import_(self, s, top) -> None:
        own = self.scan.file.own
        for a in s.names:
            if a.asname:
                self.bind(a.asname, (a.name,) if is_megatron(a.name, own) else None, top)
            else:
                head = a.name.split(".")[0]
                self.bind(head, (head,) if head == "megatron" else None, top)

    def import_from(self, s, top) -> None:
        scan = self.scan
        megatron = s.level == 0 and is_megatron(s.module, scan.file.own)
        source = scan.absolute(s)
        exported = scan.file.exports.get(source) or {}
        if not megatron:
            scan.asked.update((source, a.name) for a in s.names if a.name != "*")
        for a in s.names:
            if a.name != "*":
                self.bind(a.asname or a.name, (f"{s.module}.{a.name}",) if megatron else exported.get(a.name), top)
            elif megatron:
                scan.file.stars.append(s.module)
            else:
                scan.file.foreign_star = True

    def definition(self, s, top) -> None:
        self.bind(s.name, None, top)

    def assign(self, s, top) -> None:
        for t in s.targets:
            self.target(t, s.value, top)

    def annotated(self, s, top) -> None:
        value = getattr(s, "value", None) if isinstance(s, ast.AnnAssign) else None
        self.target(s.target, value, top and value is not None)

    def loop(self, s, top) -> None:
        self.target(s.target, top=top)

    def with_(self, s, top) -> None:
        for item in s.items:
            if item.optional_vars is not None:
                self.target(item.optional_vars, top=top)


_STATEMENTS = {ast.Global: _Binder.global_, ast.Delete: _Binder.delete, ast.Import: _Binder.import_,
               ast.ImportFrom: _Binder.import_from, ast.FunctionDef: _Binder.definition,
               ast.AsyncFunctionDef: _Binder.definition, ast.ClassDef: _Binder.definition, ast.Assign: _Binder.assign,
               ast.AnnAssign: _Binder.annotated, ast.AugAssign: _Binder.annotated, ast.For: _Binder.loop,
               ast.AsyncFor: _Binder.loop, ast.With: _Binder.with_, ast.AsyncWith: _Binder.with_}
