# SPDX-License-Identifier: Apache-2.0
"""Names a try/except ImportError makes optional, and the lines where their uses are protected.

``try: from megatron... import X / except ImportError: ...`` (guard kinds ``guards.REBOUND``, ``guards.OPTIONAL``).
Where the import fails on the candidate, a use of ``X`` below the ``try`` does not touch megatron when:

- the handler binds ``X`` again to something else (``X = open``, ``from other import X``, ``def X``): the use
  reads the fallback (REBOUND);
- the handler turns the feature off (``X = None``, ``HAVE_X = False``) and the file refuses to go on without it
  (``assert HAVE_X``, or ``if not HAVE_X: raise``/``return``): the project stops there with its own message where
  the feature is missing (OPTIONAL). A name turned off and only branched on (``if HAVE_X: ...``) guards that
  branch alone (project.py's flag branches), and one never tested protects nothing: nothing stops the use
  (NeMo's ``HAVE_MEGATRON_CORE = False``, then ``set_pipeline_model_parallel_split_rank(...)`` unconditionally);
- the handler turns the feature off and the use sits in the branch of a feature switch, an ``if`` on a project
  name or attribute (``if self.enable_routing_replay:``, or one part of an ``and``; SWITCHED): the
  project wrote that the import may fail and runs the code only when a user turns the switch on. The guard says
  so, because turning it on where the import fails raises there (ms-swift's RouterReplay, development set).
  A comparison, a call or a subscript alone is data, not a switch, and guards nothing.

Only failures of the imported names themselves are protected (a missing name or module); a call of ``X`` with a
keyword the candidate's ``X`` lacks is still a break where ``X`` imports.
"""
from __future__ import annotations

import ast
from dataclasses import dataclass

from ...ast_tools import dotted, statements
from . import guards as g

_DEFS = (ast.FunctionDef, ast.AsyncFunctionDef)


@dataclass(frozen=True)
class Optional:
    imports: frozenset  # the megatron paths the try binds that this protects
    start: int  # the lines of the scope the try binds them in (the module: the whole file)
    end: int
    guard: tuple  # (kind, line, detail, note), as project.py's guard stack holds them


def optional_imports(tree: ast.Module, every: list) -> list[Optional]:
    """Per ``try`` with megatron imports and an ``except ImportError`` handler, what it makes optional.
    ``every``: the file's statements, nested defs included (the scanner's walk)."""
    tries = [(s, found) for s in every if isinstance(s, ast.Try) for found in (_megatron_imports(s.body),) if found]
    if not tries:
        return []
    defs = [d for d in every if isinstance(d, _DEFS)]
    out: list[Optional] = []
    refused: dict | None = None
    for node, imported in tries:
        scope = max((d for d in defs if d.lineno < node.lineno <= (d.end_lineno or d.lineno)),
                    key=lambda d: d.lineno, default=tree)
        handlers = [h for h in node.handlers if g.IMPORT_FAILURES & g.handler_names(h) and not g.reraises(h)]
        if not handlers or not g.try_catches(node.handlers) & g.IMPORT_FAILURES:
            continue
        rebound, off = _handler_bindings(handlers)
        start, end = (1, 10 ** 9) if scope is tree else (scope.lineno, scope.end_lineno or scope.lineno)
        again = frozenset(path for name, path in imported.items() if name in rebound)
        if again:
            out.append(Optional(again, start, end, (g.REBOUND, node.lineno, again,
                                                    f"the fallback binds {', '.join(sorted(rebound & set(imported)))} "
                                                    "again")))
        if off:
            refused = _refusals(every) if refused is None else refused
            seen = sorted((line, name) for name in off for line in refused.get(name, ())
                          if not node.lineno <= line <= (node.end_lineno or node.lineno))
            rest = frozenset(path for name, path in imported.items() if name not in rebound)
            if seen and rest:
                line, name = seen[0]
                out.append(Optional(rest, start, end, (g.OPTIONAL, node.lineno, rest,
                                                       f"the fallback sets {name} off, and line {line} refuses to go on without it")))
            elif rest:
                out += _switched(every, node, rest, sorted(off)[0], set(imported) | off, start, end)
    return out


def _switched(every: list, node: ast.Try, paths: frozenset, name: str, own: set, start: int, end: int) -> list:
    """An Optional per branch of a feature switch below ``node`` in its scope (lines ``start``..``end``)."""
    out = []
    for branch in every:
        if not isinstance(branch, ast.If) or not start <= branch.lineno <= end or \
                branch.lineno <= (node.end_lineno or node.lineno):
            continue
        switch = _switch(branch.test, own)
        if switch is None:
            continue
        body = branch.orelse if switch.startswith("not ") else branch.body
        if body:
            out.append(Optional(paths, body[0].lineno, max(s.end_lineno or s.lineno for s in body),
                                (g.SWITCHED, branch.lineno, paths,
                                 f"the fallback sets {name} off, and this runs only when `{switch.removeprefix('not ')}` "
                                 "is on: turning it on where the import fails raises here")))
    return out


def _switch(test, own: set) -> str | None:
    """The text of the feature switch a test requires on (``self.flag``, ``not args.x``, ``flag and f(y)``: in an
    ``and``, the parts that are switches), when the test reads none of ``own``; else None."""
    if any(isinstance(n, ast.Name) and n.id in own for n in ast.walk(test)):
        return None
    negated = isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not)
    inner = test.operand if negated else test
    parts = inner.values if isinstance(inner, ast.BoolOp) and isinstance(inner.op, ast.And) and not negated \
        else [inner]
    texts = [dotted(p) for p in parts if isinstance(p, (ast.Name, ast.Attribute))]
    texts = [t for t in texts if t]
    if not texts or (negated and len(parts) > 1):
        return None
    return ("not " if negated else "") + " and ".join(texts)


def protecting(optional: list[Optional], line: int, path: str) -> list[tuple]:
    """The guards of ``optional`` that protect a use of ``path`` at ``line``."""
    return [o.guard for o in optional if o.start <= line <= o.end
            and any(path == d or path.startswith(d + ".") for d in o.imports)]


def _megatron_imports(body: list) -> dict:
    """name -> megatron path of each ``from megatron... import name`` / ``import megatron.x as name`` in a body."""
    out = {}
    for s in statements(body):
        if isinstance(s, ast.ImportFrom) and s.level == 0 and s.module and \
                (s.module == "megatron" or s.module.startswith("megatron.")):
            out.update({a.asname or a.name: f"{s.module}.{a.name}" for a in s.names if a.name != "*"})
        elif isinstance(s, ast.Import):
            out.update({a.asname: a.name for a in s.names if a.asname and a.name.startswith("megatron.")})
    return out


def _handler_bindings(handlers: list) -> tuple[set, set]:
    """(names the handlers bind to something, names they set to None/False) at any depth of their bodies."""
    rebound: set = set()
    off: set = set()
    for handler in handlers:
        for s in statements(handler.body):
            if isinstance(s, (ast.Assign, ast.AnnAssign)):
                value = s.value
                targets = s.targets if isinstance(s, ast.Assign) else [s.target]
                names = {t.id for t in targets if isinstance(t, ast.Name)}
                if isinstance(value, ast.Constant) and value.value in (None, False):
                    off |= names
                elif value is not None:
                    rebound |= names
            elif isinstance(s, (ast.Import, ast.ImportFrom)):
                rebound |= {a.asname or a.name.split(".")[0] for a in s.names if a.name != "*"}
            elif isinstance(s, (*_DEFS, ast.ClassDef)):
                rebound.add(s.name)
    return rebound - off, off


def _refusals(every: list) -> dict:
    """name -> lines where the file refuses to go on without it: ``assert NAME`` (``is not None``), or an ``if`` on
    ``NAME`` (plain, ``not``, ``is None``, ``is not None``) whose branch for the name being off raises or returns.
    ``every``: the file's statements, nested defs included."""
    out: dict = {}
    for node in every:
        if isinstance(node, ast.Assert):
            name = _asserted(node.test)
        elif isinstance(node, ast.If):
            name, off_branch = _polarity(node)
            name = name if name and g.exits(off_branch) else None
        else:
            continue
        if name:
            out.setdefault(name, []).append(node.lineno)
    return out


def _asserted(test) -> str | None:
    """The name ``assert NAME`` / ``assert NAME is not None`` requires to be on (None for other asserts)."""
    if isinstance(test, ast.Name):
        return test.id
    if isinstance(test, ast.Compare) and isinstance(test.left, ast.Name) and len(test.ops) == 1 and \
            isinstance(test.ops[0], ast.IsNot) and isinstance(test.comparators[0], ast.Constant) and \
            test.comparators[0].value is None:
        return test.left.id
    return None


def _polarity(node: ast.If) -> tuple:
    """(the name an ``if`` tests, the branch that runs when it is off: None/False), or (None, [])."""
    test = node.test
    if isinstance(test, ast.Name):
        return test.id, node.orelse
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not) and isinstance(test.operand, ast.Name):
        return test.operand.id, node.body
    if isinstance(test, ast.Compare) and isinstance(test.left, ast.Name) and len(test.ops) == 1 and \
            isinstance(test.comparators[0], ast.Constant) and test.comparators[0].value is None:
        if isinstance(test.ops[0], ast.Is):
            return test.left.id, node.body
        if isinstance(test.ops[0], ast.IsNot):
            return test.left.id, node.orelse
    return None, []
