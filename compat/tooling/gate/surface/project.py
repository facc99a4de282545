# SPDX-License-Identifier: Apache-2.0
"""Every use of megatron in a project's Python, with the guards around it. Files are read, never imported.

A use is an import (module or name), an attribute chain off an imported name or module alias
(``mpu.get_x``, ``tp.gather``), a call of an imported callable or class (keywords, positional count,
``super().__init__`` of a megatron base, ``functools.partial``), or a ``getattr``/``hasattr`` probe. Names follow
Python's scoping: imports inside functions, parameters and local assignments that shadow an import.
"""
from __future__ import annotations

import ast
import builtins
import os
import re
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from ....errors import CandidateError, CompatError
from ...archive import read_file
from ...ast_tools import COMPOUND, DEFS, child_nodes, dotted, statements, walk
from ...pysource import SourceUnparsableError, parse_source
from . import guards as g
from .fallbacks import optional_imports, protecting
from .forwarding import (
    AMBIGUOUS,
    FORWARDER_WORDS,
    PROJECT_CALL,
    SELF_VALUE,
    WORDS,
    add_forwarder,
    resolve_project_calls,
)
from .instances import PROJECT_CLASS, bound_names, bound_once, held_attributes, held_path, scope_instances, walrus_in
from .line_starts import line_start_matches
from .model import PARAMS, VARARGS, VARKW, parse_signature, signature
from .pool import map_in_workers
from .project_classes import (
    BASES,
    CLASS_VALUES,
    COMPUTED,
    FILE,
    MEGATRON_BASES,
    MEMBERS,
    METHOD_LINES,
    OPEN,
    base_names,
    descendants,
    megatron_subclass_names,
    resolve_project_instances,
)
from .providers import (
    DEF,
    FACTORY,
    MAX_DEPTH,
    METHOD,
    call_slots,
    defined,
    file_factories,
    project_function,
    settle,
    wanted,
    wanted_defs,
)
from .scan_cache import FileScan, ScanCache, view_of
from .spelling import Spelling
from .splats import dict_keys

MAX_FILES = 20_000  # .py files looked at
MAX_FILE_BYTES = 2 << 20  # larger files are skipped and listed
MAX_TOTAL_BYTES = 512 << 20
SKIP_DIRS = {".git", ".hg", ".svn", "__pycache__", "node_modules", ".tox", ".nox", ".venv", "venv", ".eggs",
             "site-packages", ".mypy_cache", ".pytest_cache", "build", "dist"}


SELF_ATTRIBUTE = "self attribute"  # ``self.X`` that only a megatron base class can have set
SUPER_AFTER = "super(Base).__init__"  # the call goes to the class after the named one in its MRO


class ProjectError(CompatError):
    """The project directory cannot be read (exit 3)."""


@dataclass(frozen=True)
class Use:
    path: str
    line: int
    name: str  # dotted megatron name
    how: str  # module | import | attribute | call | probe
    guards: tuple = ()
    alternatives: tuple = ()  # other megatron names the same binding may denote (try/except imports)
    keywords: tuple = ()
    keyword_lines: tuple = ()  # the line of each keyword (a call may span many lines)
    positional: int | None = None  # None: a *args splat, or not a call
    splat: bool = False  # a **kwargs splat
    via: str = ""  # super().__init__, functools.partial, getattr default, hasattr
    sig: str = ""  # for an override: the project method's signature (model.signature's compact form)
    siblings: tuple = ()  # for an override: every method its class defines (they replace the base's callers)
    callables: tuple = ()  # for a call: (slot, the project function's name, its signature, where) for each
    # argument that is a project function (a model provider); slot "0" positional, "=kw" a keyword; where: see
    # providers.py (the def's (path, line), None: at the call, or a reference settled once every file is scanned)
    spec: tuple = ()  # for a spec: (its key in the megatron class's submodules, the project class, the keywords
    # build_module adds from the spec: "submodules" and the params' keys; None when the params are not a literal)
    top: bool = False  # runs when the module is imported (in no function body; swallowed.py)


@dataclass
class ProjectScan:
    root: str
    uses: list = field(default_factory=list)
    files: int = 0  # python files read
    megatron_files: int = 0  # files with at least one use
    skipped: list = field(default_factory=list)  # (path, why)
    own_packages: list = field(default_factory=list)  # megatron.X packages the project itself provides
    sets: set = field(default_factory=set)  # megatron names the project assigns (monkeypatches)
    classes: dict = field(default_factory=dict)  # "module.Class" -> {method: signature, BASES: ...} of its classes
    factories: dict = field(default_factory=dict)  # "module.function" -> (providers.factory_of's answer, path)
    sources: list = field(default_factory=list)  # (rel, path) of every Python file (annotated.ProjectNames)

    def method(self, origin: str, name: str) -> str | None:
        """The signature of the method ``name`` a project class defines or inherits from a project base (None
        where it comes from elsewhere or is not known)."""
        entry = self._defining(origin, name)
        return entry[name] if entry is not None else None

    def method_def(self, origin: str, name: str) -> tuple[str, int] | None:
        """(file, line) of the def of the method ``method(origin, name)`` reads (None: not known)."""
        entry = self._defining(origin, name)
        line = (entry.get(METHOD_LINES) or {}).get(name) if entry is not None else None
        return (entry[FILE], line) if line and entry.get(FILE) else None

    def _defining(self, origin: str, name: str, depth: int = 0) -> dict | None:
        entry = self.classes.get(origin)
        if entry is None or depth > 8:
            return None
        if name in entry:
            return entry
        for base in entry[BASES]:
            if base is None:
                return None  # a megatron or unknown base comes first: the method is not the project's
            found = self._defining(base, name, depth + 1)
            if found is not None:
                return found
        return None


def _owned(name: str, own: tuple) -> bool:
    """``name`` is in one of the project's own megatron packages (``own``: ``megatron.bridge``)."""
    return any(name == o or name.startswith(o + ".") for o in own)


def _is_megatron(name: str | None, own: tuple = ()) -> bool:
    """A module of the megatron library: not one of the project's own megatron packages, which are project modules
    like any other (what they import is followed)."""
    return bool(name) and (name == "megatron" or name.startswith("megatron.")) and not _owned(name, own)


class _FileScanner:
    def __init__(self, path: str, tree: ast.Module, own: tuple, versionish: bool = True,
                 exports: dict | None = None, walrus: bool = True, source: bytes | None = None):
        self.path, self.own = path, own
        self.walrus = walrus  # the source has ``:=`` (else no expression needs walking for bindings)
        self.exports = exports or {}  # project module -> {name: megatron paths} it binds at module level
        self.asked: set = set()  # (project module, name) of each ``from module import name`` (what exports bind)
        self.module, self.is_package = project_module(path)
        every = list(statements(tree.body, into_defs=True))
        spelling = Spelling(source) if source is not None else None
        self.supers = spelling.lines(words=("super",)) if spelling is not None else None  # lines saying super
        self.flags = g.version_flags(tree, every, spelling) if versionish else set()
        self.guard_lines = g.guard_lines(spelling, self.flags) if spelling is not None else None
        self.import_flags = g.import_flags(tree, every)
        self.optional = optional_imports(tree, every)  # names a try/except ImportError makes optional (fallbacks.py)
        self.forwarders = {n.name for n in every
                           if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and _only_splats(n.args)}
        self.defs = _module_functions(tree.body)
        self.owners: list = []  # per function: (the name of self, "module.Class") in a method of a top-level class
        self.bound_once: list = []  # per function: (body, args), then name -> the value of its one binding
        self.counts: dict[int, Counter] = {}  # id(a scope's body) -> instances.bound_names of that scope
        self.local_defs: dict[int, dict] = {}  # id(a function's scope) -> the functions its body defines
        self.instances: dict[int, dict] = {}  # id(a scope) -> its names that hold a megatron instance
        self.dicts: dict[int, object] = {}  # id(a scope) -> (body, args), then its dicts with known keys (splats.py)
        self.forwarded: dict = {}  # functions that pass their **kwargs on to a megatron callee (forwarding.py)
        self.frames: list = []  # per function: its Frame (what forwarding.py needs to know about it)
        self.tree = tree
        self._imported_in_defs: dict | None = None
        self.origins = dict(self.project_imports(statements(tree.body)))
        top = {node.name: node for node in tree.body if isinstance(node, ast.ClassDef)}
        self.classes = {name: {**_methods(node), BASES: tuple(self.class_origin(b, top) for b in node.bases),
                               METHOD_LINES: _method_lines(node), FILE: path}
                        for name, node in top.items()}
        self.factories = file_factories(tree.body, self.defs, _callable, _named_classes(tree, *self.module_of(), own))
        self.held: list[dict] = []  # per class: the attributes its __init__ sets to a megatron instance
        self.held_self: list = []  # per function: (the name of self, its class's held attributes) or None
        self.forwarding = False  # inside the targets of ``megatron.f = wrapper`` where wrapper(*args, **kwargs)
        self.stars: list[str] = []  # ``from megatron.x import *`` modules
        self.foreign_star = False  # a star import from anywhere else: a free name may come from there
        self.class_scope: list[bool] = []
        self.instance: list = []  # per class: (its megatron base, the attributes it sets) or None
        self.self_names: list = []  # per function: the name of ``self`` when it is a method of such a class
        self.scopes: list[dict] = []
        self.bound: list[set] = []  # per scope: local names bound to megatron, visible ones included
        self.guards: list[tuple] = []
        self.sig_probed: list[set] = [set()]
        self.bases: list[tuple | None] = []
        self.class_names: list[str] = []
        self.uses: list[Use] = []
        self.sets: set[str] = set()
        self.enter(self._bindings(tree.body, ()))
        self.file_names = _bound_anywhere(tree) if self.stars and not self.foreign_star else set()
        for name, node in top.items():
            values = self._class_values(node)
            if values:
                self.classes[name][CLASS_VALUES] = values
        # a function that names a project class may hold an instance of a project subclass of a megatron class,
        # or a class attribute bound to a class (``self.ConfigClass(**d)``)
        classlike = {name for name in (*self.origins, *self.classes) if name[:1].isupper()} | {
            attr for entry in self.classes.values() for attr in entry.get(CLASS_VALUES, ())}
        if FORWARDER_WORDS in self.exports:  # a later round: calls of the forwarders' methods are walked too
            self.asked.add((FORWARDER_WORDS, WORDS))
            classlike |= set(self.exports[FORWARDER_WORDS].get(WORDS, ()))
        self.spelled = spelling.lines(words=self.bound[0] | classlike, anywhere=("megatron", "import", "submodules")) \
            if spelling is not None else None
        for name, node in top.items():  # what project_classes.py needs to type instances of project subclasses
            entry = self.classes[name]
            entry[MEGATRON_BASES] = tuple(self.paths(b) for b in node.bases)
            closed = node.bases and all(p or m for p, m in zip(entry[BASES], entry[MEGATRON_BASES]))
            entry[MEMBERS] = _own_attributes(node) if closed else OPEN  # an open class: never read
        self.instances[id(self.scopes[0])] = scope_instances(tree.body, None, self.paths, self.walrus,
                                                             self.project_class, self.bound_in)
        self.dicts[id(self.scopes[0])] = (tree.body, None)
        self.block(tree.body)

    def _class_values(self, node: ast.ClassDef) -> dict:
        """A class body's ``NAME = X`` where X is a megatron name or a project class (project_classes.CLASS_VALUES);
        None for a name the class also binds elsewhere (in a branch of its body, as ``obj.NAME = ...``)."""
        values: dict = {}
        direct: set = set()  # the targets the body's own statements bind (the last binding is the value)
        for s in node.body:
            target = s.targets[0] if isinstance(s, ast.Assign) and len(s.targets) == 1 else (
                s.target if isinstance(s, ast.AnnAssign) and s.value is not None else None)
            if isinstance(target, ast.Name):
                direct.add(id(target))
                named = isinstance(s.value, (ast.Name, ast.Attribute))
                megatron = self.paths(s.value) if named else None
                origin = self.project_class(s.value) if named and not megatron else None
                values[target.id] = ("megatron", megatron) if megatron else ("project", origin) if origin else None
        if not any(values.values()):
            return {}
        for sub in ast.walk(node):  # bound anywhere else in the class: a branch of its body, ``obj.NAME = ...``
            name = sub.attr if isinstance(sub, ast.Attribute) else (
                sub.id if isinstance(sub, ast.Name) and id(sub) not in direct else None)
            if name in values and isinstance(sub.ctx, ast.Store):
                values[name] = None
        return {k: v for k, v in values.items() if v is not None}

    def enter(self, scope: dict, is_class: bool = False) -> None:
        """A new scope; a function's body does not see the class bodies around it (Python's rule)."""
        outer = next((b for b, c in zip(reversed(self.bound), reversed(self.class_scope)) if not c), set())
        if is_class and self.bound:
            outer = self.bound[-1]
        self.scopes.append(scope)
        self.class_scope.append(is_class)
        self.bound.append((outer - set(scope)) | {n for n, v in scope.items() if v})

    def leave(self) -> None:
        self.scopes.pop()
        self.class_scope.pop()
        self.bound.pop()

    # ---- names ---------------------------------------------------------------------------------------------
    def scope_of(self, name: str) -> dict | None:
        """The innermost scope that binds ``name`` among those it is looked up in (class bodies only when they are
        innermost), or None."""
        scopes, is_class = self.scopes, self.class_scope
        last = len(scopes) - 1
        for index in range(last, -1, -1):
            scope = scopes[index]
            if name in scope and (index == last or not is_class[index]):
                return scope
        return None

    def at_module(self, name: str) -> bool:
        """``name`` is bound by no scope inside the module that it is looked up in (the module's own, or none)."""
        scope = self.scope_of(name)
        return scope is None or scope is self.scopes[0]

    def lookup(self, name: str):
        scope = self.scope_of(name)
        return scope[name] if scope is not None else None

    def paths(self, expr) -> tuple | None:
        chain = dotted(expr)
        if not chain:
            return None
        root, _, rest = chain.partition(".")
        bound = self.lookup(root) or self.from_star(root)
        if not bound:
            return None
        return tuple(p + ("." + rest if rest else "") for p in bound)

    def from_star(self, name: str) -> tuple | None:
        """A name bound nowhere in the file, not a builtin, with only megatron star imports: it comes from them."""
        if not self.stars or self.foreign_star or name in self.file_names or hasattr(builtins, name) or \
                self.scope_of(name) is not None:
            return None
        return tuple(f"{m}.{name}" for m in self.stars)

    def _bindings(self, body: list, params) -> dict:
        """Names bound in one function, class body or the module: megatron paths, or None where a local shadows
        them. A statement directly in the body (not under ``if``/``try``) rebinds: ``mpu = Other()`` after
        ``from megatron.core import mpu`` shadows the import, as does a rebinding after ``del mpu``; branches
        bind the union (``try: from megatron... import X / except ImportError: X = None``)."""
        scope: dict = {p: None for p in params}
        declared_global: set = set()
        deleted: set = set()

        def bind(name, value, top=False):
            if top or name in deleted:
                scope[name] = value or None
                deleted.discard(name)
            elif value:
                scope[name] = tuple(dict.fromkeys((scope.get(name) or ()) + value))
            elif name not in scope:
                scope[name] = None

        def target(t, value=None, top=False):
            if isinstance(t, ast.Name) and t.id not in declared_global:
                bound = None
                chain = dotted(value) if value is not None else None
                if chain:
                    root, _, rest = chain.partition(".")
                    base = scope.get(root) if root in scope else self.lookup(root)
                    bound = tuple(p + ("." + rest if rest else "") for p in base) if base else None
                bind(t.id, bound, top and not _is_none(value))
            elif isinstance(t, (ast.Tuple, ast.List)):
                for e in t.elts:
                    target(e.value if isinstance(e, ast.Starred) else e, top=top)

        def expressions(s, top):
            """Walrus targets in a statement's own expressions (not in nested defs or lambdas); the test of an
            ``if`` directly in the body always runs, so its walrus rebinds."""
            for node in walrus_in([v for f, v in ast.iter_fields(s) if f not in _BLOCKS]):
                target(node.target, node.value, top)

        def walk(stmts, top):
            for s in stmts:
                if self.walrus and not isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                    expressions(s, top)
                if isinstance(s, ast.Global):
                    declared_global.update(s.names)
                elif isinstance(s, ast.Delete):
                    deleted.update(t.id for t in s.targets if isinstance(t, ast.Name))
                elif isinstance(s, ast.Import):
                    for a in s.names:
                        if a.asname:
                            bind(a.asname, (a.name,) if _is_megatron(a.name, self.own) else None, top)
                        else:
                            head = a.name.split(".")[0]
                            bind(head, (head,) if head == "megatron" else None, top)
                elif isinstance(s, ast.ImportFrom):
                    megatron = s.level == 0 and _is_megatron(s.module, self.own)
                    source = self.absolute(s)
                    exported = self.exports.get(source) or {}
                    if not megatron:
                        self.asked.update((source, a.name) for a in s.names if a.name != "*")
                    for a in s.names:
                        if a.name != "*":
                            bind(a.asname or a.name, (f"{s.module}.{a.name}",) if megatron else exported.get(a.name),
                                 top)
                        elif megatron:
                            self.stars.append(s.module)
                        else:
                            self.foreign_star = True
                elif isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                    bind(s.name, None, top)
                elif isinstance(s, ast.Assign):
                    for t in s.targets:
                        target(t, s.value, top)
                elif isinstance(s, (ast.AnnAssign, ast.AugAssign)):
                    value = getattr(s, "value", None) if isinstance(s, ast.AnnAssign) else None
                    target(s.target, value, top and value is not None)
                elif isinstance(s, (ast.For, ast.AsyncFor)):
                    target(s.target, top=top)
                elif isinstance(s, (ast.With, ast.AsyncWith)):
                    for item in s.items:
                        if item.optional_vars is not None:
                            target(item.optional_vars, top=top)
                if type(s) not in _NESTING:
                    continue
                for child in ("body", "orelse", "finalbody"):
                    walk(getattr(s, child, []) or [], top and isinstance(s, (ast.With, ast.AsyncWith)))
                for handler in getattr(s, "handlers", []) or []:
                    if handler.name:
                        bind(handler.name, None)
                    walk(handler.body, False)
                for case in getattr(s, "cases", []) or []:
                    for node in ast.walk(case.pattern):
                        for name in (getattr(node, "name", None), getattr(node, "rest", None)):
                            if isinstance(name, str):
                                bind(name, None, True)  # a capture: what the case body sees
                    walk(case.body, False)
        walk(body, True)
        return scope

    def absolute(self, s: ast.ImportFrom) -> str:
        """The module a ``from X import`` reads, relative imports resolved against this file's module."""
        return _absolute(s, self.module, self.is_package)

    def module_of(self) -> tuple[str, bool]:
        return self.module, self.is_package

    def module_exports(self) -> dict:
        """The megatron names this file binds at module level (what ``from this_module import x`` gets)."""
        return {name: paths for name, paths in self.scopes[0].items() if paths}

    # ---- recording -----------------------------------------------------------------------------------------
    def record(self, node, paths, how: str, **extra) -> None:
        paths = tuple(p for p in paths if not _owned(p, self.own))
        if not paths:
            return
        guards = tuple(self.guards)
        if self.optional:
            guards += tuple(protecting(self.optional, node.lineno, paths[0]))
        if how == "call" and paths[0] in self.sig_probed[-1]:
            guards += ((g.SIGNATURE, node.lineno, None, None),)
        self.uses.append(Use(self.path, node.lineno, paths[0], how, guards, paths[1:],
                             top=all(self.class_scope[1:]), **extra))

    def push(self, kind, line, detail=None, note: str | None = None) -> None:
        self.guards.append((kind, line, frozenset(detail) if detail is not None else None, note))

    # ---- statements ----------------------------------------------------------------------------------------
    def block(self, body: list) -> None:
        pushed = 0
        for stmt in body:
            self.stmt(stmt)
            if isinstance(stmt, ast.If) and g.exits(stmt.body):
                _then, rest = self.branch_guards(stmt.test)  # ``if not has_x: return`` guards the rest
                if rest and rest[0] not in (g.TYPE_CHECKING, g.DEAD):
                    self.push(rest[0], stmt.lineno, rest[1])
                    pushed += 1
        del self.guards[len(self.guards) - pushed:]

    def branches(self, test, line: int, parts: tuple, visit) -> None:
        """``test``, then each part of a conditional (body, else) visited under the guard its branch gives."""
        self.expr(test)
        for guard, part in zip(self.branch_guards(test), parts):
            if guard:
                self.push(guard[0], line, guard[1])
            visit(part)
            if guard:
                self.guards.pop()

    def branch_guards(self, test) -> tuple:
        """(guard of the body, guard of the else branch) of ``if test:``; either may be None.

        A ``hasattr``/``getattr`` probe on a megatron object protects the branch that runs when the attribute is
        there for that name, and makes the other branch a fallback that runs only where it is missing. A flag set
        by a try/except ImportError does the same for the imports of that try, and guards nothing else."""
        flagged = self.flag_branches(test)
        if flagged is not None:
            return flagged
        guard = self.test_kind(test)
        if not guard:
            return self.compared_branches(test) or (None, None)
        if guard[0] in (g.TYPE_CHECKING, g.DEAD):
            return guard, None  # the else of TYPE_CHECKING runs
        negated = isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not)
        probed = self.probed_paths(test.operand if negated else test) if guard[0] == g.PROBE else ()
        if not probed:
            return guard, guard
        fallback, taken = (g.PROBE_ELSE, probed), (g.PROBE_TAKEN, probed)
        return (fallback, taken) if negated else (taken, fallback)

    def compared_branches(self, test) -> tuple | None:
        """``if x == E.m:`` (or a local name assigned once to that comparison): the body runs only where a value can
        equal the megatron member ``E.m`` (check.py decides on the candidate); ``!=`` the else branch."""
        if isinstance(test, ast.Name) and self.lookup(test.id) is None:
            value = self.once().get(test.id)
            test = value if isinstance(value, ast.Compare) else test
        if not (isinstance(test, ast.Compare) and len(test.ops) == 1
                and isinstance(test.ops[0], (ast.Eq, ast.Is, ast.NotEq, ast.IsNot))):
            return None
        for side in (test.left, test.comparators[0]):
            members = self.paths(side) if isinstance(side, ast.Attribute) else None
            if members:
                guard = (g.COMPARED, frozenset(members))
                return (guard, None) if isinstance(test.ops[0], (ast.Eq, ast.Is)) else (None, guard)
        return None

    def flag_branches(self, test) -> tuple | None:
        """``if HAVE_X:`` / ``if not use_old:`` / ``if HAVE_X and ...:`` on an import flag (see guards.import_flags)."""
        negated = isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not)
        inner = test.operand if negated else test
        conjunct = not negated and isinstance(inner, ast.BoolOp) and isinstance(inner.op, ast.And)
        names = [v for v in inner.values if isinstance(v, ast.Name)] if conjunct else [inner]
        flag = next((self.import_flags[n.id] for n in names if isinstance(n, ast.Name) and n.id in self.import_flags
                     and self.lookup(n.id) is None), None)
        if flag is None:
            return None
        if not flag.imports:
            return None, None  # about another package: it guards no megatron use
        ok = (g.FLAG, flag.imports)
        fails = None if flag.other else (g.FALLBACK, flag.imports)  # other imports may fail alone: undecidable
        when_true, when_false = (ok, fails) if flag.true_when_ok else (fails, ok)
        if conjunct:
            return when_true, None
        return (when_false, when_true) if negated else (when_true, when_false)

    def probed_paths(self, test) -> tuple:
        """``hasattr(mpu, "x")`` / ``getattr(mpu, "x", None)`` as the whole test, or ``y == getattr(E, "x", None)``:
        the megatron names it asks about (the branch runs only where they exist)."""
        if isinstance(test, ast.Compare) and len(test.ops) == 1 and isinstance(test.ops[0], (ast.Eq, ast.Is, ast.In)):
            for side in (test.left, test.comparators[0]):
                if isinstance(side, ast.Call) and (dotted(side.func) or "") == "getattr" and len(side.args) == 3 \
                        and isinstance(side.args[2], ast.Constant) and side.args[2].value is None:
                    return self.probed_paths(side)
            return ()
        if not (isinstance(test, ast.Call) and (dotted(test.func) or "").split(".")[-1] in ("hasattr", "getattr")
                and len(test.args) >= 2 and isinstance(test.args[1], ast.Constant)
                and isinstance(test.args[1].value, str)):
            return ()
        owner = self.paths(test.args[0])
        return tuple(f"{p}.{test.args[1].value}" for p in owner or ())

    def test_kind(self, test) -> tuple | None:
        guard = g.test_guard(test, self.flags, self.bound[-1], self.guard_lines)
        if guard and guard[0] == g.AVAILABILITY:  # ``Foo is not None`` protects only Foo being absent
            local = next(iter(guard[1]))
            return g.AVAILABILITY, frozenset(p.split(".")[-1] for p in self.lookup(local) or ())
        return guard

    def stmt(self, s) -> None:
        if isinstance(s, ast.Import):
            for a in s.names:
                if _is_megatron(a.name, self.own):
                    self.record(s, (a.name,), "module")
        elif isinstance(s, ast.ImportFrom):
            if s.level == 0 and _is_megatron(s.module, self.own):
                self.record(s, (s.module,), "module")
                for a in s.names:
                    if a.name != "*":
                        self.record(s, (f"{s.module}.{a.name}",), "import")
        elif isinstance(s, ast.Try) or type(s).__name__ == "TryStar":
            off = g.disabled_by(s.handlers)
            self.push(g.TRY, s.lineno, g.try_catches(s.handlers),
                      f"the fallback sets {', '.join(off)}: that feature is off where this fails" if off else None)
            first = len(self.uses)
            self.block(s.body)
            self.guards.pop()
            imported = {u.name for u in self.uses[first:] if u.how in ("module", "import")}
            for handler in s.handlers:
                if handler.type is not None:
                    self.expr(handler.type)
                fallback = imported and (g.IMPORT_FAILURES & g.handler_names(handler))
                if fallback:  # runs only where one of the imports above fails on the candidate
                    self.push(g.FALLBACK, s.lineno, imported)
                self.block(handler.body)
                if fallback:
                    self.guards.pop()
            self.block(s.orelse)
            self.block(s.finalbody)
        elif isinstance(s, (ast.If, ast.While)):
            self.branches(s.test, s.lineno, (s.body, s.orelse), self.block)
        elif isinstance(s, ast.Assign):
            self.spec_edit(s)
            self.expr(s.value)
            self.forwarding = self.forwards(s.value)
            for t in s.targets:
                self.expr(t)
                if isinstance(t, ast.Attribute) and not self.forwarding:
                    self.replacement(s, self.paths(t), s.value)
            self.forwarding = False
        elif isinstance(s, (ast.With, ast.AsyncWith)):
            pushed = 0
            for item in s.items:
                self.expr(item.context_expr)
                if item.optional_vars is not None:
                    self.expr(item.optional_vars)
                caught = g.suppress_catches(item)
                if caught:
                    self.push(g.TRY, s.lineno, caught)
                    pushed += 1
            self.block(s.body)
            del self.guards[len(self.guards) - pushed:]
        elif isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef)):
            for node in s.decorator_list + s.args.defaults + [d for d in s.args.kw_defaults if d is not None]:
                self.expr(node)
            self.function(s, s.body)
        elif isinstance(s, ast.ClassDef):
            for node in s.decorator_list + s.bases + [k.value for k in s.keywords]:
                self.expr(node)
            bases = [self.paths(b) for b in s.bases]
            self.bases.append(next((b for b in bases if b), None))
            self.class_names.append(s.name)
            if self.bases[-1]:
                self.overrides(s, self.bases[-1])
            only_megatron = bool(s.bases) and all(bases)  # a project mixin may set anything on self
            self.instance.append((self.bases[-1][0], _own_attributes(s)) if only_megatron else None)
            self.held.append(held_attributes(s, self.paths))
            self.enter(self._bindings(s.body, ()), is_class=True)
            self.block(s.body)
            self.leave()
            self.held.pop()
            self.instance.pop()
            self.class_names.pop()
            self.bases.pop()
        elif isinstance(s, (ast.For, ast.AsyncFor)):
            self.expr(s.target)
            self.expr(s.iter)
            self.block(s.body)
            self.block(s.orelse)
        elif hasattr(ast, "Match") and isinstance(s, ast.Match):
            self.expr(s.subject)
            for case in s.cases:
                self.block(case.body)
        else:
            for child in child_nodes(s):
                if isinstance(child, ast.stmt):
                    self.stmt(child)
                else:
                    self.expr(child)

    def overrides(self, node: ast.ClassDef, bases: tuple) -> None:
        """Each method of a class with a megatron base, as an ``override`` use (checked in overrides.py)."""
        defined = tuple(sorted(i.name for i in node.body if isinstance(i, (ast.FunctionDef, ast.AsyncFunctionDef))
                               and not self.calls_super(i)))
        for item in node.body:
            if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)) and item.args.args and \
                    not _decorated(item, _NOT_PLAIN):
                self.uses.append(Use(self.path, item.lineno, f"{bases[0]}.{item.name}", "override",
                                     alternatives=tuple(f"{b}.{item.name}" for b in bases[1:]),
                                     sig=signature(item.args), siblings=defined))

    def calls_super(self, method) -> bool:
        """_calls_super, for a method whose lines (decorators included) spell ``super`` only."""
        first = min([method.lineno] + [d.lineno for d in method.decorator_list])
        if self.supers is not None and not self.supers.within(first, method.end_lineno or method.lineno):
            return False
        return _calls_super(method)

    def inherited(self, e: ast.Attribute) -> str | None:
        """``self.X`` read in a method of a class whose bases are all megatron's, X set nowhere in the class: what
        the megatron base sets on ``self`` (``megatron...SelfAttention.model_comm_pgs``)."""
        context = self.self_names[-1] if self.self_names else None
        if context is None or not isinstance(e.ctx, ast.Load) or not isinstance(e.value, ast.Name) \
                or e.value.id != context[0] or self.lookup(context[0]) is not None:
            return None
        base, own = context[1]
        return None if e.attr in own or COMPUTED in own or e.attr.startswith("__") else f"{base}.{e.attr}"

    def instance_of(self, name: str) -> tuple | None:
        """The megatron classes ``name`` holds an instance of, in the innermost scope that binds it."""
        scope = self.scope_of(name)
        return self.instances.get(id(scope), {}).get(name) if scope is not None else None

    def frame(self, node, body, plain: bool) -> Frame:
        """A module-level function, or a plain method of a top-level class: its key, ``**`` parameter, the dicts
        its body fills from that parameter, and (a method) the name of ``self`` and its class's key."""
        top = len(self.scopes) == 2 or (len(self.scopes) == 3 and self.class_scope[1])
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) or self.frames or not top:
            return Frame()
        owner = f"{self.module}.{self.class_names[-1]}" if len(self.scopes) == 3 else None
        kwarg = node.args.kwarg.arg if node.args.kwarg else None
        carriers = {kwarg} | {s.value.func.value.id for s in body if isinstance(s, ast.Expr) and kwarg
                              and isinstance(s.value, ast.Call) and isinstance(s.value.func, ast.Attribute)
                              and s.value.func.attr == "update" and isinstance(s.value.func.value, ast.Name)
                              and len(s.value.args) == 1 and isinstance(s.value.args[0], ast.Name)
                              and s.value.args[0].id == kwarg} if kwarg else set()
        self_name = node.args.args[0].arg if owner and plain and node.args.args else None
        return Frame(f"{owner or self.module}.{node.name}", signature(node.args), frozenset(carriers), self_name,
                     owner)

    def project_callee(self, func) -> str | None:
        """The key of the project function (or ``self.method``) a call names, for forwarding.py."""
        frame = self.frames[-1] if self.frames else Frame()
        if isinstance(func, ast.Name) and self.at_module(func.id) and not self.lookup(func.id):
            return f"{self.module}.{func.id}" if self.defs.get(func.id) else self.origins.get(func.id)
        if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) and frame.self_name \
                and func.value.id == frame.self_name and self.lookup(frame.self_name) is None:
            return f"{frame.owner}.{func.attr}"
        return None

    def dict_keys_of(self, name: str) -> tuple:
        """The keys certain to be in the dict ``name`` holds, in the innermost scope that binds it."""
        scope = self.scope_of(name)
        if scope is None:
            return ()
        known = self.dicts.get(id(scope))
        if isinstance(known, tuple):
            known = self.dicts[id(scope)] = dict_keys(*known, self.walrus, self.bound_in)
        return (known or {}).get(name, ())

    def bound_in(self, body: list, args) -> Counter:
        """instances.bound_names of one scope, counted once for all that ask (instances, dict splats, once())."""
        counts = self.counts.get(id(body))
        if counts is None:
            counts = self.counts[id(body)] = bound_names(body, args, self.walrus)
        return counts

    def once(self) -> dict:
        """The innermost function's names bound once and their values (instances.bound_once), read the first time
        asked."""
        known = self.bound_once[-1] if self.bound_once else {}
        if isinstance(known, tuple):
            known = self.bound_once[-1] = bound_once(known[0], self.bound_in(*known))
        return known

    def instance_member(self, e) -> tuple | None:
        """``w.attr`` or ``self.x.attr`` off a held megatron instance: (``Class.attr`` for each class it may be,
        the ``via`` of its use)."""
        context = self.held_self[-1] if self.held_self else None
        return held_path(e, self.instance_of, *(context or (None, {})))

    def forwards(self, value) -> bool:
        """A wrapper that takes only ``*args, **kwargs`` (and so forwards everything to what it wraps)."""
        if isinstance(value, ast.Lambda):
            return _only_splats(value.args)
        return isinstance(value, ast.Name) and value.id in self.forwarders and self.lookup(value.id) is None

    def quiet(self, node) -> bool:
        """A function that spells no name bound to megatron (in the module: no enclosing function binds one), no
        capitalised name of a project class it may hold (project_classes.py), no ``megatron``, no ``import`` and no
        ``submodules`` (a spec edit), outside any class with a megatron base or an ``__init__`` that keeps a
        megatron instance on ``self``, in a file without megatron star imports: nothing in it can be a use, so it
        is not walked. A new kind of use that needs none of these (say,
        a megatron object kept on ``self`` in another method) must make this False where it can occur, with its case
        in tests/unit/test_surface_speed.py's CASES (the prefilters against the full walk)."""
        if self.spelled is None or self.stars or (self.bases and self.bases[-1]) or (self.held and self.held[-1]):
            return False
        if any(not bound <= self.bound[0] for bound in self.bound[1:]):
            return False
        return not self.spelled.spans(node)

    def function(self, node, body) -> None:
        if isinstance(body, list) and self.quiet(node):
            return
        args = node.args
        params = [a.arg for a in args.posonlyargs + args.args + args.kwonlyargs]
        params += [a.arg for a in (args.vararg, args.kwarg) if a is not None]
        saved = self.guards
        self.guards = [x for x in saved if x[0] != g.TRY]  # the body runs later, outside any enclosing try
        method = isinstance(body, list) and self.class_scope and self.class_scope[-1] and args.args
        self.self_names.append((args.args[0].arg, self.instance[-1]) if method and self.instance[-1] else None)
        self.enter(self._bindings(body if isinstance(body, list) else [ast.Expr(body)], params))
        if isinstance(body, list):
            self.local_defs[id(self.scopes[-1])] = _module_functions(body, self.function_signature)
            self.instances[id(self.scopes[-1])] = scope_instances(body, args, self.paths, self.walrus,
                                                                  self.project_class, self.bound_in)
            self.dicts[id(self.scopes[-1])] = (body, args)  # read with dict_keys on a ``**name`` call only
        plain = not _decorated(node, ("staticmethod", "classmethod"))
        self.frames.append(self.frame(node, body, plain))
        self.held_self.append((args.args[0].arg, self.held[-1]) if method and self.held and plain else None)
        top_class = len(self.class_names) == 1 and self.class_names[0] in self.classes
        self.owners.append((args.args[0].arg, f"{self.module}.{self.class_names[0]}")
                           if method and plain and top_class else None)
        self.bound_once.append((body, args) if isinstance(body, list) else {})  # read with once() on need only
        self.sig_probed.append(set())
        if isinstance(body, list):
            self.block(body)
        else:
            self.expr(body)
        self.sig_probed.pop()
        self.local_defs.pop(id(self.scopes[-1]), None)
        self.instances.pop(id(self.scopes[-1]), None)
        self.dicts.pop(id(self.scopes[-1]), None)
        self.held_self.pop()
        self.frames.pop()
        self.owners.pop()
        self.bound_once.pop()
        self.leave()
        self.self_names.pop()
        self.guards = saved

    # ---- expressions ---------------------------------------------------------------------------------------
    def expr(self, e) -> None:
        kind = type(e)  # node types are compared by identity: the parser makes no subclasses of them
        if kind in _LEAVES:
            return
        if kind is ast.Attribute:
            held = self.instance_member(e)
            if held:
                if isinstance(e.ctx, ast.Load):
                    self.record(e, held[0], "attribute", via=held[1])
                else:
                    self.sets.update(held[0])  # the project sets it on its instance: its own from here on
                return
            inherited = self.inherited(e)
            if inherited:
                self.record(e, (inherited,), "attribute", via=SELF_ATTRIBUTE)
            paths = self.paths(e)
            if paths:
                if isinstance(e.ctx, (ast.Store, ast.Del)):
                    if not self.forwarding:  # a forwarding wrapper still calls the original: keep checking it
                        self.sets.update(paths)
                    parent = self.paths(e.value)
                    if parent and isinstance(e.value, ast.Attribute):
                        self.record(e, parent, "attribute")
                else:
                    self.record(e, paths, "attribute")
                return
            self.expr(e.value)
        elif kind is ast.Call:
            self.call(e)
        elif kind is ast.BoolOp:
            pushed = 0
            for value in e.values:
                self.expr(value)
                then, other = self.branch_guards(value)
                guard = other if isinstance(e.op, ast.Or) else then  # ``a or b``: b runs where a is false
                if guard:
                    self.push(guard[0], e.lineno, guard[1])
                    pushed += 1
            del self.guards[len(self.guards) - pushed:]
        elif kind is ast.IfExp:
            self.branches(e.test, e.lineno, (e.body, e.orelse), self.expr)
        elif kind is ast.Lambda:
            for d in e.args.defaults:
                self.expr(d)
            self.function(e, e.body)
        elif kind in _COMPREHENSIONS:
            self.comprehension(e)
        elif kind is ast.Name:
            star = self.from_star(e.id) if type(e.ctx) is ast.Load else None
            if star:
                self.record(e, star, "attribute")
        else:
            for child in child_nodes(e):
                self.expr(child)

    def comprehension(self, e) -> None:
        """The first iterable runs outside; the targets are local to the comprehension."""
        self.expr(e.generators[0].iter)
        names = {n.id for gen in e.generators for n in ast.walk(gen.target) if isinstance(n, ast.Name)}
        self.enter(dict.fromkeys(names))
        for index, gen in enumerate(e.generators):
            if index:
                self.expr(gen.iter)
            for cond in gen.ifs:
                self.expr(cond)
        for part in (e.key, e.value) if isinstance(e, ast.DictComp) else (e.elt,):
            self.expr(part)
        self.leave()

    def call(self, e: ast.Call) -> None:
        name = dotted(e.func) or ""
        tail = name.split(".")[-1]
        args = e.args
        if tail in ("getattr", "hasattr") and len(args) >= 2 and isinstance(args[1], ast.Constant) \
                and isinstance(args[1].value, str):
            owner = self.paths(args[0])
            if owner:
                default = tail == "getattr" and (len(args) > 2 or any(k.arg == "default" for k in e.keywords))
                probed = tuple(f"{p}.{args[1].value}" for p in owner)
                if tail == "hasattr" or default:
                    self.push(g.PROBE, e.lineno, {args[1].value})
                self.record(e, probed, "probe", via=tail + (" with default" if default else ""))
                if tail == "hasattr" or default:
                    self.guards.pop()
        elif tail == "signature" and args:
            probed = self.paths(args[0])
            for p in probed or ():
                self.sig_probed[-1].add(p[: -len(".__init__")] if p.endswith(".__init__") else p)
        elif tail in ("import_module", "__import__") and args and isinstance(args[0], ast.Constant) \
                and _is_megatron(str(args[0].value), self.own):
            self.record(e, (str(args[0].value),), "module",
                        via="importlib.import_module" if tail == "import_module" else "__import__")
        elif tail == "setattr" and len(args) == 3 and isinstance(args[1], ast.Constant) \
                and isinstance(args[1].value, str):
            owner = self.paths(args[0])
            self.replacement(e, tuple(f"{p}.{args[1].value}" for p in owner or ()), args[2])
        elif len(args) >= 2 and isinstance(args[0], ast.Constant) and isinstance(args[0].value, str) \
                and _DOTTED_PATH.fullmatch(args[0].value) and _is_megatron(args[0].value, self.own):
            # ``register("megatron.core.x.Y.forward", my_forward)``, ``mock.patch("megatron...", fake)``: megatron
            # then calls the project's function in the original's place
            # the name stays megatron's: whether the registrar installs it on the path a use runs is not known
            self.replacement(e, (args[0].value,), args[1])
        elif tail == "partial" and args:
            target = self.paths(args[0])
            if target:
                self.record(e, target, "call", keywords=tuple(k.arg for k in e.keywords if k.arg),
                            splat=True, via="functools.partial")
        if isinstance(e.func, ast.Attribute) and e.func.attr == "__init__" and isinstance(e.func.value, ast.Call) \
                and dotted(e.func.value.func) == "super" and self.bases:
            self._super_init(e, e.func.value.args)
        target = self.paths(e.func)
        if target and target[0].endswith(".ModuleSpec"):
            self.specs(e)
        held = None if target else self.instance_member(e.func)
        if target or held:
            self._record_call(e, *((target, "") if target else held))
        else:
            self._class_value_call(e)
            callee = self.project_callee(e.func) if any(k.arg for k in e.keywords) else None
            if callee:
                named = [k for k in e.keywords if k.arg]
                self.uses.append(Use(self.path, e.lineno, callee, "call", tuple(self.guards), keywords=tuple(
                    k.arg for k in named), keyword_lines=tuple(k.lineno for k in named), via=PROJECT_CALL))
            self.expr(e.func)
        for a in args:
            self.expr(a)
        for k in e.keywords:
            self.expr(k.value)

    def _class_value_call(self, e: ast.Call) -> None:
        """``self.NAME(**kwargs)`` directly in a forwarder, unguarded: it forwards to what ``NAME`` is in the class
        of the ``self.method(...)`` call (forwarding.SELF_VALUE, resolved once every file is read)."""
        frame = self.frames[-1] if len(self.frames) == 1 else Frame()
        func = e.func
        if frame.key and frame.self_name and not self.guards and isinstance(func, ast.Attribute) \
                and isinstance(func.value, ast.Name) and func.value.id == frame.self_name \
                and self.lookup(frame.self_name) is None and any(
                    k.arg is None and isinstance(k.value, ast.Name) and k.value.id in frame.carriers
                    for k in e.keywords):
            add_forwarder(self.forwarded, frame.key, (SELF_VALUE + func.attr,), frame.sig)

    def specs(self, e: ast.Call) -> None:
        """``ModuleSpec(module=MegatronClass, submodules=Subs(key=ModuleSpec(module=ProjectClass, ...)))``: the
        megatron class builds ``key`` with ``build_module`` and calls it; one ``spec`` use per project class."""
        outer = _keyword(e, "module", 0)
        classes = self.paths(outer) if outer is not None else None
        submodules = _keyword(e, "submodules", 2)
        if not classes or not isinstance(submodules, ast.Call):
            return
        for k in submodules.keywords:
            inner, added = k.value, ()
            if isinstance(k.value, ast.Call) and (self.paths(k.value.func) or ("",))[0].endswith(".ModuleSpec"):
                inner, added = _keyword(k.value, "module", 0), _spec_keywords(k.value)
            origin = self.project_class(inner)
            if k.arg and origin:
                self.uses.append(Use(self.path, k.value.lineno, classes[0], "spec", tuple(self.guards),
                                     classes[1:], spec=(k.arg, origin, added)))

    def spec_edit(self, s: ast.Assign) -> None:
        """``spec.submodules.key.module = ProjectClass`` or ``spec.submodules.key = ModuleSpec(module=ProjectClass)``
        on a spec of unknown origin: a ``spec`` use for whichever megatron class builds ``key`` (name "")."""
        value, added = s.value, ()
        if isinstance(value, ast.Call) and (self.paths(value.func) or ("",))[0].endswith(".ModuleSpec"):
            value, added = _keyword(value, "module", 0), _spec_keywords(value)
        origin = self.project_class(value)
        for t in s.targets if origin else ():
            if isinstance(t, ast.Attribute) and t.attr == "module" and isinstance(t.value, ast.Attribute):
                t, added = t.value, None  # the spec's params and submodules stay as they were: unknown here
            if isinstance(t, ast.Attribute) and isinstance(t.value, ast.Attribute) and t.value.attr == "submodules":
                self.uses.append(Use(self.path, s.lineno, "", "spec", tuple(self.guards), spec=(t.attr, origin, added)))

    def class_origin(self, node, top: dict) -> str | None:
        """``module.Class`` of a base written as a name of this file's top-level classes or of its imports."""
        if not isinstance(node, ast.Name):
            return None
        return f"{self.module}.{node.id}" if node.id in top else self.origins.get(node.id)

    def project_class(self, node) -> str | None:
        """``module.Class`` of a project class a name denotes (defined at the top of this file or imported)."""
        if not isinstance(node, ast.Name) or self.lookup(node.id) or not self.at_module(node.id):
            return None
        if node.id in self.classes:
            return f"{self.module}.{node.id}"
        return self.origins.get(node.id)

    def _super_init(self, e: ast.Call, super_args: list) -> None:
        """``super().__init__`` calls the first base; ``super(Base, self).__init__`` the class after Base in the MRO,
        which only the candidate knows (check.py resolves ``via="super(Base)"``)."""
        first = dotted(super_args[0]) if super_args else None
        if first is None or (self.class_names and first == self.class_names[-1]):
            if self.bases[-1]:
                self._record_call(e, self.bases[-1], via="super().__init__")
            return
        named = self.paths(super_args[0])
        if named:
            self._record_call(e, named, via=SUPER_AFTER)

    def _record_call(self, e: ast.Call, target: tuple, via: str = "") -> None:
        starred = any(isinstance(a, ast.Starred) for a in e.args)
        frame = self.frames[-1] if len(self.frames) == 1 else Frame()
        if frame.key and not via and not self.guards and any(
                k.arg is None and isinstance(k.value, ast.Name) and k.value.id in frame.carriers for k in e.keywords):
            add_forwarder(self.forwarded, frame.key, target, frame.sig)
        named = [(k.arg, getattr(k, "lineno", e.lineno)) for k in e.keywords if k.arg]
        for k in e.keywords:  # ``**d`` of a dict this scope builds with literal keys: those keys are keywords too
            if k.arg is None and isinstance(k.value, ast.Name):
                named += [(key, line) for key, line in self.dict_keys_of(k.value.id)
                          if key not in {n for n, _ in named}]
        self.record(e, target, "call", keywords=tuple(n for n, _ in named),
                    keyword_lines=tuple(line for _, line in named),
                    positional=None if starred else len(e.args), splat=any(k.arg is None for k in e.keywords),
                    via=via, callables=self.callables(e) if not starred else ())

    def replacement(self, node, paths, value) -> bool:
        """``paths`` (a megatron callable) replaced by the project function ``value`` names: a top-level def of
        this file or one imported from a project module, read once every file is scanned (providers.DEF). False
        when ``value`` is no such function (a module object put in ``sys.modules``, a local, megatron's own)."""
        if not paths or not isinstance(value, ast.Name) or self.lookup(value.id):
            return False
        if not self.at_module(value.id):  # imported in a function (a patch adaptor's method): one origin in the file
            origin = self.imported_in_defs().get(value.id)
        elif value.id in self.defs:
            origin = f"{self.module}.{value.id}" if self.defs[value.id] else None  # "": not one function
        else:
            origin = self.origins.get(value.id)
        if origin:
            self.record(node, paths, "replacement", callables=(("replaced", value.id, "", (DEF, origin)),))
        return bool(origin)

    def imported_in_defs(self) -> dict:
        """name -> "module.name" of the project names this file imports anywhere, functions included; a name
        imported from two places is left out."""
        if self._imported_in_defs is None:
            found: dict = {}
            for name, origin in self.project_imports(statements(self.tree.body, into_defs=True)):
                found[name] = origin if found.get(name, origin) == origin else None
            self._imported_in_defs = {k: v for k, v in found.items() if v}
        return self._imported_in_defs

    def project_imports(self, stmts) -> list[tuple[str, str]]:
        """(bound name, "module.name") of each ``from X import name`` of ``stmts`` that is not a megatron import."""
        return [(a.asname or a.name, f"{self.absolute(s)}.{a.name}") for s in stmts
                if isinstance(s, ast.ImportFrom) and not (s.level == 0 and _is_megatron(s.module, self.own))
                for a in s.names]

    def callables(self, e: ast.Call) -> tuple:
        """The arguments of a megatron call that are a project function: a name the innermost scope that binds it
        defines once (``def``, ``f = partial(g, ...)``, ``f = lambda ...``), such a ``partial``/``lambda`` written
        in the call, or what providers.py follows (a factory's return value, ``self.method``)."""
        found = ((slot, self.callable_of(a, 0)) for slot, a in call_slots(e))
        return tuple((slot, *named) for slot, named in found if named)

    def callable_of(self, node, depth: int) -> tuple | None:
        """(name, signature, where) of a function expression (providers.py), or None."""
        named = _callable(node, self.function_signature)
        if named:
            return (*named, None)
        if isinstance(node, ast.Call) and depth < MAX_DEPTH:
            target = project_function(node.func, self.module, self.defs, self.origins)
            if target and not self.lookup(dotted(node.func)):
                arguments = tuple((slot, found) for slot, a in call_slots(node)
                                  for found in (self.callable_of(a, depth + 1),) if found)
                return f"{dotted(node.func)}(...)", "", (FACTORY, target, arguments)
        if not (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and isinstance(node.ctx, ast.Load)):
            return None
        owner = self.owners[-1] if self.owners else None
        if owner and node.value.id == owner[0]:
            return f"{owner[0]}.{node.attr}", "", (METHOD, owner[1], node.attr)
        value = self.once().get(node.value.id)
        origin = self.project_class(value.func) if isinstance(value, ast.Call) else None
        if origin:  # ``obj = ProjectClass(...)`` bound once in this function: its method
            return f"{node.value.id}.{node.attr}", "", (METHOD, origin, node.attr)
        return None

    def function_signature(self, name: str) -> str:
        """The signature of the function ``name`` denotes here ("" when it is not one function of this file)."""
        scope = self.scope_of(name)
        defs = self.defs if scope is None or scope is self.scopes[0] else self.local_defs.get(id(scope), {})
        return defs.get(name) or ""


@dataclass(frozen=True)
class Frame:
    key: str | None = None  # module.function or module.Class.method (None: a nested function, a lambda)
    sig: str = ""
    carriers: frozenset = frozenset()  # its ** parameter and the dicts ``d.update(kwargs)`` fills from it
    self_name: str | None = None
    owner: str | None = None  # module.Class of a method


def _keyword(call: ast.Call, name: str, position: int):
    """The argument of ``call`` for the parameter ``name`` at ``position``, or None."""
    found = next((k.value for k in call.keywords if k.arg == name), None)
    if found is None and len(call.args) > position and not any(isinstance(a, ast.Starred) for a in call.args):
        found = call.args[position]
    return found


def _spec_keywords(spec: ast.Call) -> tuple | None:
    """The keywords ``build_module`` adds from a ``ModuleSpec(...)``: ``submodules`` when it has some, and the
    keys of ``params``; None when the params are not a literal dict with string keys."""
    params = _keyword(spec, "params", 1)
    submodules = _keyword(spec, "submodules", 2)
    added = ("submodules",) if submodules is not None and not _is_none(submodules) else ()
    if params is None:
        return added
    if not isinstance(params, ast.Dict) or not all(isinstance(k, ast.Constant) and isinstance(k.value, str)
                                                   for k in params.keys):
        return None
    return added + tuple(k.value for k in params.keys)


def _methods(node: ast.ClassDef) -> dict:
    """name -> signature of the plain methods a class body defines."""
    return {i.name: signature(i.args) for i in _plain_methods(node)}


def _method_lines(node: ast.ClassDef) -> dict:
    """name -> the line of the def of each plain method a class body defines (the last one, as ``_methods``)."""
    return {i.name: i.lineno for i in _plain_methods(node)}


def _plain_methods(node: ast.ClassDef) -> list:
    return [i for i in node.body if isinstance(i, (ast.FunctionDef, ast.AsyncFunctionDef))
            and not _decorated(i, _NOT_PLAIN)]


_NOT_PLAIN = ("staticmethod", "classmethod", "property")  # decorators after which a method is no plain method


def _decorated(node, names: tuple) -> bool:
    """A decorator of ``node`` (a def; a lambda has none) is one of ``names`` (by its last dotted part)."""
    return any((dotted(d) or "").split(".")[-1] in names for d in getattr(node, "decorator_list", ()))


def _calls_super(method) -> bool:
    """The method calls ``super().<its own name>(...)``: it extends the base's version rather than replacing it."""
    return any(isinstance(n, ast.Attribute) and n.attr == method.name and isinstance(n.value, ast.Call)
               and dotted(n.value.func) == "super" for n in ast.walk(method))


def _module_functions(body: list, outer=None) -> dict:
    """name -> signature of each function a module or function body defines at its top level (``def``, or a
    ``partial``/``lambda`` of one assigned to a name; ``outer`` gives the signature of a name the body does not
    define); "" for a name bound twice."""
    defs: dict[str, str] = {}
    for stmt in body:
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)):
            defs[stmt.name] = "" if stmt.name in defs else signature(stmt.args)
        elif isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name) \
                and stmt.targets[0].id not in defs:
            named = _callable(stmt.value, lambda name: defs.get(name, "") if name in defs or outer is None
                              else outer(name))
            defs[stmt.targets[0].id] = named[1] if named else ""
        elif isinstance(stmt, (ast.Assign, ast.ClassDef, ast.Import, ast.ImportFrom)):
            for name in _top_names(stmt):
                if name in defs:
                    defs[name] = ""
    return defs


def _callable(node, signature_of) -> tuple | None:
    """(what to call it, its signature) when ``node`` is a function of the project: a name ``signature_of``
    knows, ``lambda ...`` (its own parameters), or ``functools.partial(f, ...)`` of one (what is left unbound)."""
    if isinstance(node, ast.Name):
        sig = signature_of(node.id)
        return (node.id, sig) if sig else None
    if isinstance(node, ast.Lambda):
        return "<lambda>", signature(node.args)
    if isinstance(node, ast.Call) and (dotted(node.func) or "") in ("partial", "functools.partial") and node.args:
        inner = _callable(node.args[0], signature_of)
        if inner is None or any(isinstance(a, ast.Starred) for a in node.args) or \
                any(k.arg is None for k in node.keywords):
            return None
        sig = partial_signature(inner[1], len(node.args) - 1, {k.arg for k in node.keywords})
        return (f"partial({inner[0]})", sig) if sig else None
    return None


def partial_signature(sig: str, bound: int, keywords: set) -> str | None:
    """What ``functools.partial(f, <bound positionals>, <keywords>)`` takes (as ``inspect.signature`` says): the
    first ``bound`` positional parameters gone, bound keywords optional, and the positional parameters from the
    first bound keyword on keyword-only. None when the partial itself cannot bind that."""
    parsed = parse_signature(sig)
    positional = [p for p in parsed[PARAMS] if p[1] in (0, 1)]
    if bound > len(positional) and not parsed[VARARGS]:
        return None
    out, keyword_only = [], False
    for index, (name, kind, default) in enumerate(parsed[PARAMS]):
        if kind in (0, 1) and index < bound:
            continue
        if name in keywords:
            if kind == 0:
                return None
            default, keyword_only = 1, keyword_only or kind == 1
        out.append(f"{name}:{2 if keyword_only and kind == 1 else kind}:{default}")
    return f"{parsed[VARARGS]}{parsed[VARKW]}|{','.join(out)}"


def _top_names(stmt) -> list[str]:
    if isinstance(stmt, ast.ClassDef):
        return [stmt.name]
    if isinstance(stmt, (ast.Import, ast.ImportFrom)):
        return [(a.asname or a.name).split(".")[0] for a in stmt.names]
    return [t.id for t in stmt.targets if isinstance(t, ast.Name)]


def _bound_anywhere(tree: ast.Module) -> set[str]:
    """Every name the file binds in any scope (stores, defs, classes, parameters, imports, captures)."""
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Load):
            names.add(node.id)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, ast.arg):
            names.add(node.arg)
        elif isinstance(node, ast.alias):
            names.add((node.asname or node.name).split(".")[0])
        elif isinstance(node, (ast.Global, ast.Nonlocal)):
            names.update(node.names)
        elif isinstance(node, ast.ExceptHandler) and node.name:
            names.add(node.name)
        for attr in ("name", "rest"):
            value = getattr(node, attr, None) if type(node).__name__.startswith("Match") else None
            if isinstance(value, str):
                names.add(value)
    return names


_BLOCKS = {"body", "orelse", "finalbody", "handlers", "cases"}
_NESTING = COMPOUND - DEFS  # statements with blocks of the same scope
# expression nodes with nothing below them that the scan reads: None (an absent child), constants, contexts, operators
_LEAVES = frozenset({type(None), ast.Constant, *(kind for family in (ast.expr_context, ast.operator, ast.boolop,
                                                                    ast.unaryop, ast.cmpop)
                                                 for kind in family.__subclasses__())})
_COMPREHENSIONS = frozenset({ast.ListComp, ast.SetComp, ast.GeneratorExp, ast.DictComp})


def _is_none(node) -> bool:
    return isinstance(node, ast.Constant) and node.value is None


def _own_attributes(node: ast.ClassDef) -> frozenset[str]:
    """Everything a class sets or defines itself: class-body names, methods, ``self.X =`` and ``setattr`` anywhere
    in it (a ``setattr`` with a computed name: ``COMPUTED``, it may set anything). Remembered on the node: a
    top-level class is read for its members and again where its body is scanned."""
    found = node.__dict__.get("_compat_own")
    if found is None:
        found = node._compat_own = frozenset(_walk_own_attributes(node))
    return found


_OWN_KINDS = frozenset({ast.Name, ast.Attribute, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Call})
_NAMES_AND_CONSTANTS = frozenset({ast.Name, ast.Constant})  # nothing below them


def _walk_own_attributes(node: ast.ClassDef) -> set[str]:
    # every node of the class that may set or define a name (a set is built: the order does not matter)
    names: set[str] = set()
    load = ast.Load
    for sub in walk(node, _OWN_KINDS, _NAMES_AND_CONSTANTS):
        kind = type(sub)
        if kind is ast.Name or kind is ast.Attribute:
            if type(sub.ctx) is not load:
                names.add(sub.id if kind is ast.Name else sub.attr)
        elif kind is not ast.Call:
            if sub is not node:
                names.add(sub.name)
        elif (dotted(sub.func) or "").split(".")[-1] in ("setattr", "register_buffer", "register_parameter",
                                                          "add_module"):
            first = sub.args[1] if dotted(sub.func) == "setattr" and len(sub.args) > 1 else (
                sub.args[0] if sub.args else None)
            if isinstance(first, ast.Constant) and isinstance(first.value, str):
                names.add(first.value)
            else:
                names.add(COMPUTED)
    return names


def _absolute(s: ast.ImportFrom, module: str, is_package: bool) -> str:
    """The module a ``from X import`` in ``module`` reads, relative imports resolved."""
    if not s.level:
        return s.module or ""
    base = module.split(".") if is_package else module.split(".")[:-1]
    base = base[: len(base) - (s.level - 1)] if s.level > 1 else base
    return ".".join(base + ([s.module] if s.module else []))


def _named_classes(tree: ast.Module, module: str, is_package: bool, own: tuple = ()) -> dict:
    """name -> "module.Name" of what may be a project class at a module's top: its classes and its
    ``from X import Name`` names (whether one is a project class is known once every file is scanned)."""
    found = {a.asname or a.name: f"{_absolute(s, module, is_package)}.{a.name}" for s in statements(tree.body)
             if isinstance(s, ast.ImportFrom) and not (s.level == 0 and _is_megatron(s.module, own)) for a in s.names}
    found.update({node.name: f"{module}.{node.name}" for node in tree.body if isinstance(node, ast.ClassDef)})
    return found


def _only_splats(args: ast.arguments) -> bool:
    return bool(args.vararg or args.kwarg) and not (args.posonlyargs or args.args or args.kwonlyargs)


def project_module(path: str) -> tuple[str, bool]:
    """``pkg/helper.py`` -> ("pkg.helper", False); ``src/pkg/__init__.py`` -> ("pkg", True)."""
    parts = path[:-3].split("/") if path.endswith(".py") else path.split("/")
    is_package = parts[-1] == "__init__"
    if is_package:
        parts = parts[:-1]
    if parts and parts[0] == "src":
        parts = parts[1:]
    return ".".join(parts), is_package


def _scan(text: bytes | str, path: str, own: tuple, exports: dict | None, prefilter: bool = True) -> _FileScanner:
    tree = parse_source(text, path)  # the per-file caps (bytes, estimated tokens) bound its memory before parsing
    source = text.encode("utf-8", "surrogatepass") if isinstance(text, str) else text
    text = text.decode("utf-8", "replace") if isinstance(text, bytes) else text
    return _FileScanner(path, tree, own, versionish=bool(g.VERSIONISH.search(text)), exports=exports,
                        walrus=":=" in text, source=source if prefilter else None)


def scan_source(text: bytes | str, path: str = "<string>", own: tuple = (), exports: dict | None = None,
                *, prefilter: bool = True) -> tuple[list, set]:
    """Uses of megatron in one file, and the megatron names it assigns. A file over the parse caps or not valid
    Python raises ``compat.tooling.pysource``'s errors (CandidateError). ``prefilter=False``
    walks every function and every test (no look at the source's spelling first): what the prefilters must match."""
    scanner = _scan(text, path, own, exports, prefilter)
    alone = ProjectScan("", classes={f"{scanner.module}.{n}": m for n, m in scanner.classes.items()})
    factories = {f"{scanner.module}.{n}": (found, path) for n, found in scanner.factories.items()}
    return settle(scanner.uses, factories, alone.method), scanner.sets


def _python_files(root: Path):
    """(relative posix path, absolute path) of every .py file, not following symlinks, skipping VCS and venvs."""
    count = 0
    for dirpath, dirnames, filenames in os.walk(root):
        here = Path(dirpath)
        dirnames[:] = sorted(d for d in dirnames if d not in SKIP_DIRS and not d.startswith(".")
                             and not (here / d).is_symlink() and not (here / d / "pyvenv.cfg").exists())
        for name in sorted(filenames):
            if not name.endswith(".py"):
                continue
            path = here / name
            if path.is_symlink():
                continue
            count += 1
            if count > MAX_FILES:
                raise ProjectError(f"the project holds over {MAX_FILES} Python files; point --project at its "
                                   "package directory")
            yield path.relative_to(root).as_posix(), path


def own_packages(relpaths) -> tuple:
    """``megatron.X`` packages the project provides itself (Megatron-Bridge's ``src/megatron/bridge``), except core.

    A ``megatron`` directory counts only where it is a top-level package: its parent is not a package itself
    (``swift/megatron/`` is ``swift.megatron``)."""
    rel = set(relpaths)
    own = set()
    for path in rel:
        parts = path.split("/")
        for i, part in enumerate(parts[:-2]):
            parent_init = "/".join(parts[:i] + ["__init__.py"])
            package_init = "/".join(parts[: i + 2] + ["__init__.py"])
            if part == "megatron" and parts[i + 1] != "core" and parent_init not in rel and package_init in rel:
                own.add(f"megatron.{parts[i + 1]}")
    return tuple(sorted(own))


_FROM_IMPORT = re.compile(rb"from[ \t]+(\.*[\w.]*)[ \t]+import")  # at a line start: line_starts.py
_REEXPORT_ROUNDS = 4  # re-exports through project modules, followed this many links deep


def _module_names(rel: str) -> list[str]:
    """Every name a project file may be imported as (``a/b/c.py``: a.b.c, b.c, c: the root is not known)."""
    module, _ = project_module(rel)
    parts = module.split(".")
    return [".".join(parts[i:]) for i in range(len(parts)) if parts[i:]]


def _from_modules(data: bytes, rel: str) -> set[str]:
    """The modules a file's ``from X import`` lines read (relative ones resolved), from the bytes alone."""
    module, is_package = project_module(rel)
    out = set()
    for match in line_start_matches(data, b"from", _FROM_IMPORT):
        text = match.group(1).decode("ascii", "replace")
        level = len(text) - len(text.lstrip("."))
        if not level:
            out.add(text)
            continue
        base = module.split(".") if is_package else module.split(".")[:-1]
        base = base[: len(base) - (level - 1)] if level > 1 else base
        out.add(".".join(base + ([text[level:]] if text[level:] else [])))
    return out


def _read(scan: ProjectScan, rel: str, path: Path, total: int) -> tuple[bytes | None, int]:
    try:
        size = path.stat().st_size
        if size > MAX_FILE_BYTES:
            scan.skipped.append((rel, f"over {MAX_FILE_BYTES} bytes"))
            return None, total
        total += size
        if total > MAX_TOTAL_BYTES:
            raise ProjectError(f"the project's Python files exceed {MAX_TOTAL_BYTES} bytes in all")
        return read_file(path, MAX_FILE_BYTES, "project file"), total
    except CandidateError as exc:
        scan.skipped.append((rel, str(exc)))
    except OSError as exc:
        scan.skipped.append((rel, exc.strerror or str(exc)))
    return None, total


def scan_project(root, *, cache: bool = True) -> ProjectScan:
    """Every use in the project. Names a project module re-exports (``from pkg.helper import mpu``, where helper
    imports mpu from megatron) are followed into the files that import them, a few links deep. ``cache``: reuse
    the results of files a run scanned before with the same inputs (scan_cache.py)."""
    root = Path(root)
    if not root.is_dir():
        raise ProjectError(f"project {str(root)!r} is not a directory")
    files = list(_python_files(root))
    own = own_packages(rel for rel, _ in files)
    scan = ProjectScan(str(root), own_packages=list(own), sources=files)
    store = ScanCache.open(root) if cache else ScanCache(None, None, None)
    names_of = {rel: _module_names(rel) for rel, _ in files}
    project_modules = {m for names in names_of.values() for m in names}
    per_file: dict[str, FileScan] = {}
    unparsed: set = set()
    exports: dict[str, dict] = {}  # project module -> {name: megatron paths}
    importers: dict[str, tuple] = {}  # rel -> (data, project modules it imports from)
    bases_of: dict[str, set] = {}  # rel -> the names its class lines subclass (project_classes.base_names)
    total = 0
    subclassed: set[str] = set()  # every name written as a base of a class anywhere in the project
    forwards: dict = {}  # forwarding.py: key -> (megatron callee paths, signature), over every file

    def scan_one(rel: str, data: bytes, with_exports: dict, fresh=None) -> set:
        """Scan one file; the project modules whose exports that changed. A file scanned before with the same view
        of the exports it imports is not scanned again (the result would be the same), but its exports are still
        published again, as a new scan would. ``fresh``: the file's scan, made in a worker process."""
        done = per_file.get(rel)
        if done is None or done.view != view_of(done.asked, with_exports) or _misses_words(done, data, with_exports):
            try:
                done = _scan_file(rel, data, own, with_exports, store, fresh)
            except CandidateError as exc:  # pysource: over a parse cap, or not valid Python
                if rel not in unparsed:
                    unparsed.add(rel)
                    reason = "does not parse" if isinstance(exc, SourceUnparsableError) else "not parsed"
                    scan.skipped.append((rel, f"{reason}: {exc}"))
                return set()
            per_file[rel] = done
        mine = done.exports
        for module in names_of[rel]:
            scan.classes.update({f"{module}.{name}": methods for name, methods in done.classes.items()})
            scan.factories.update({f"{module}.{name}": (found, rel) for name, found in done.factories.items()})
        changed = {name for name in names_of[rel] if mine and exports.get(name) != mine}
        exports.update({name: mine for name in changed})
        return changed

    first: list = []  # the first round (the files that spell megatron, read with no exports), in order, each
    # with the count of files skipped before it was read (the skipped list keeps the order of one pass)
    for rel, path in files:
        data, total = _read(scan, rel, path, total)
        if data is None:
            continue
        scan.files += 1
        if b"class" in data:
            bases_of[rel] = base_names(data)
            subclassed |= bases_of[rel]
        imported = _from_modules(data, rel) & project_modules if b"import" in data else set()
        if imported:
            importers[rel] = (data, imported)
        if b"megatron" in data:
            first.append((rel, data, len(scan.skipped)))
    fresh = _first_round_in_workers(first, own, store)
    read_skips, scan.skipped, replayed = scan.skipped, [], 0
    for (rel, data, skipped_before), result in zip(first, fresh):
        scan.skipped += read_skips[replayed:skipped_before]
        replayed = skipped_before
        scan_one(rel, data, {}, result)
    scan.skipped += read_skips[replayed:]
    changed = set(exports)
    for _round in range(_REEXPORT_ROUNDS):
        now: set = set()
        for rel, (data, imported) in importers.items():
            names = {name for module in imported & changed for name in exports[module]}
            if any(name.encode() in data for name in names):  # it may import one of them (else nothing changes)
                now |= scan_one(rel, data, exports)
        changed = now
        if not changed:
            break
    spelled: dict[str, frozenset] = {}  # rel -> its identifiers, read once for all rounds
    searched: set[bytes] = set()  # the names every file not in spelled was searched for
    data_of = {rel: data for rel, data, _skipped in first} | {rel: data for rel, (data, _imported) in importers.items()}
    reexports = _Reexports(names_of, data_of.get, own)
    for _round in range(_REEXPORT_ROUNDS):  # files that never say megatron but use a project subclass of its class,
        # or may subclass a class whose method forwards **kwargs to megatron (and so redefine that method, or
        # call it with keywords: a forwarder's method names are words the scan of such a file looks for)
        reexports.resolve(scan.classes)
        closed, subclassed_only = megatron_subclass_names(scan.classes, subclassed)
        methods = [key.rsplit(".", 1) for done in per_file.values() for key in done.forwarded]
        forwarder_classes = {origin for origin, _method in methods if origin in scan.classes}
        # self.method(...) of a forwarder is read in a class below its class; a dunder is not called that way
        exports[FORWARDER_WORDS] = {WORDS: tuple(sorted({method for origin, method in methods if origin in
                                                         forwarder_classes and not method.startswith("__")}))}
        below = {origin.rpartition(".")[2] for origin in descendants(forwarder_classes, scan.classes)}
        used = closed | below
        for rel in [rel for rel in per_file if bases_of.get(rel, set()) & below]:
            scan_one(rel, data_of[rel], exports)  # read again where it was read before those words were known
        wanted = {name.encode() for name in used}
        if wanted - searched:  # the identifiers of a file not scanned yet, read the first time a round needs
            # them, only where its bytes hold a name somewhere (a whole token equal to a name is such a substring);
            # a file left out holds none of the names searched so far, so a later round searches only new ones
            somewhere = _any_substring(wanted - searched)
            spelled.update((rel, _identifiers(data)) for rel, (data, _imported) in importers.items()
                           if rel not in spelled and rel not in per_file and rel not in unparsed
                           and somewhere.search(data))
            searched |= wanted
        more = [(rel, data) for rel, (data, _imported) in importers.items()
                if rel not in per_file and rel not in unparsed
                and (spelled.get(rel, frozenset()) & wanted or bases_of.get(rel, set()) & subclassed_only)]
        for rel, data in more:
            scan_one(rel, data, exports)
        if not more:
            break
    reexports.resolve(scan.classes)
    for rel, _path in files:
        done = per_file.get(rel)
        if done is not None and done.uses:
            # uses of project classes and functions alone do not make a file one that uses megatron
            scan.megatron_files += any(u.via not in (PROJECT_CLASS, PROJECT_CALL) for u in done.uses)
            scan.uses.extend(done.uses)
        if done is not None:
            scan.sets |= done.sets
            for key, entry in done.forwarded.items():
                if entry == AMBIGUOUS:
                    forwards[key] = AMBIGUOUS
                else:
                    add_forwarder(forwards, key, *entry)
    _factories_not_scanned(scan, files, names_of, per_file, unparsed)
    reexports.alias({u.spec[1] for u in scan.uses if u.spec} | {u.name.rpartition(".")[0] for u in scan.uses
                                                                 if u.via == PROJECT_CLASS}, scan.classes)
    scan.uses = settle(resolve_project_calls(resolve_project_instances(scan.uses, scan.classes, scan.sets, subclassed),
                                             forwards, scan.classes), scan.factories, scan.method)
    store.save()
    return scan


_IDENTIFIER = re.compile(rb"[A-Za-z_][A-Za-z0-9_]*")
_DOTTED_PATH = re.compile(r"[A-Za-z_]\w*(\.[A-Za-z_]\w*)+")


def _identifiers(data: bytes) -> frozenset:
    """Every identifier-shaped word of a file's bytes, as bytes (a use of a class needs its name as a whole token:
    ``Config`` inside ``GPTConfig`` is not one)."""
    return frozenset(_IDENTIFIER.findall(data))


def _any_substring(words: set[bytes]) -> re.Pattern:
    """Matches where any of ``words`` occurs in bytes, token or not (cheaper than ``_identifiers`` on every file)."""
    return re.compile(b"|".join(re.escape(word) for word in sorted(words)))


def _factories_not_scanned(scan: ProjectScan, files: list, names_of: dict, per_file: dict, unparsed: set) -> None:
    """The factories (providers.py) of project modules a provider comes from that were not scanned (they do not
    spell megatron): parsed now, only those."""
    missing = {target.rpartition(".")[0] for target in wanted(scan.uses) if target not in scan.factories}
    # a replacement's def is read wherever it is, scanned file or not (the scan keeps no plain def's line)
    defs: dict = {}
    for target in wanted_defs(scan.uses):
        if target not in scan.factories:
            module, _, name = target.rpartition(".")
            defs.setdefault(module, set()).add(name)
    skipped = {rel for rel, _why in scan.skipped}
    for rel, path in files if missing else ():  # wanted() names the DEF targets too: their modules are in missing
        modules = set(names_of[rel])
        if rel in unparsed or rel in skipped or not missing & modules or (rel in per_file and not set(defs) & modules):
            continue
        data, _total = _read(scan, rel, path, 0)
        try:
            tree = parse_source(data, rel) if data is not None else None
        except CandidateError:
            continue
        if tree is None:
            continue
        found = file_factories(tree.body, _module_functions(tree.body), _callable, _named_classes(
            tree, *project_module(rel), tuple(scan.own_packages))) if rel not in per_file else {}
        for module in modules:
            scan.factories.update({f"{module}.{name}": (answer, rel) for name, answer in found.items()})
            plain = defined(tree.body, defs.get(module, set()))
            scan.factories.update({f"{module}.{name}": (answer, rel) for name, answer in plain.items()
                                   if f"{module}.{name}" not in scan.factories})


def _misses_words(done: FileScan, data: bytes, exports: dict) -> bool:
    """A file scanned without the forwarders' method names (forwarding.FORWARDER_WORDS) that calls one of them."""
    words = (exports.get(FORWARDER_WORDS) or {}).get(WORDS)
    return bool(words) and (FORWARDER_WORDS, WORDS) not in done.asked and any(
        b"." + word.encode() + b"(" in data for word in words)


class _Reexports:
    """Project classes named through a module that imports them (``from pkg.core import Bridge``, where
    ``pkg/core/__init__.py`` has ``from .bridge import Bridge``): the key of the module that defines the class, a
    few links deep. A module is read (bounded, parsed once) only when a base names a class through it."""

    def __init__(self, names_of: dict, data_of, own: tuple):
        owners: dict[str, set] = {}
        for rel, names in names_of.items():
            for name in names:
                owners.setdefault(name, set()).add(rel)
        self.file_of = {name: next(iter(rels)) for name, rels in owners.items() if len(rels) == 1}
        self.data_of, self.own = data_of, own
        self.named: dict[str, dict] = {}  # rel -> _named_classes of it ({} when it cannot be read)

    def follow(self, key: str, classes: dict) -> str | None:
        for _ in range(_REEXPORT_ROUNDS):
            if key in classes:
                return key
            module, _, name = key.rpartition(".")
            rel = self.file_of.get(module)
            if rel is None:
                return None
            if rel not in self.named:
                data = self.data_of(rel)
                try:
                    tree = parse_source(data, rel) if data is not None else None
                except CandidateError:
                    tree = None
                self.named[rel] = _named_classes(tree, *project_module(rel), self.own) if tree is not None else {}
            found = self.named[rel].get(name)
            if found is None or found == key:
                return None
            key = found
        return key if key in classes else None

    def alias(self, keys, classes: dict) -> None:
        """Make each of ``keys`` (project classes the uses name: a spec's class, an instance's) that names a class
        through another module a key of that class's entry."""
        for key in keys:
            if key and key not in classes:
                found = self.follow(key, classes)
                if found is not None:
                    classes[key] = classes[found]

    def resolve(self, classes: dict) -> None:
        """Rewrite, in ``classes``, each base named through another module to the key of its defining module."""
        for key, entry in list(classes.items()):
            bases = entry[BASES]
            if not any(b and b not in classes for b in bases):
                continue
            resolved = tuple(b if not b or b in classes else (self.follow(b, classes) or b) for b in bases)
            if resolved != tuple(bases):
                classes[key] = {**entry, BASES: resolved}


def _scan_file(rel: str, data: bytes, own: tuple, exports: dict, store: ScanCache, fresh=None) -> FileScan:
    """One file's scan with ``exports`` (from the cache when a run made the same one; ``fresh``: made in a worker
    process, a FileScan or the CandidateError it raised). CandidateError propagates."""
    key = store.key(rel, own, data)
    found = store.get(key, exports)
    if found is not None:
        return found
    result = fresh if fresh is not None else _new_scan(rel, data, own, exports)
    if isinstance(result, CandidateError):
        raise result
    store.put(key, result)
    return result


def _new_scan(rel: str, data: bytes, own: tuple, exports: dict) -> FileScan:
    scanner = _scan(data, rel, own, exports)
    return FileScan(scanner.uses, scanner.sets, scanner.module_exports(), frozenset(scanner.asked),
                    view_of(scanner.asked, exports), scanner.classes, scanner.forwarded, scanner.factories)


def _new_scan_or_error(rel: str, data: bytes, own: tuple) -> FileScan | CandidateError:
    """A worker process's job: one file of the first round (no exports), or the CandidateError it raises."""
    try:
        return _new_scan(rel, data, own, {})
    except CandidateError as exc:
        return exc


def _first_round_in_workers(first: list, own: tuple, store: ScanCache) -> list:
    """Per file of the first round: its scan made in a worker process, or None (cached, or scanned here, later:
    pool.py decides whether workers pay)."""
    jobs = [(index, rel, data) for index, (rel, data, _skipped) in enumerate(first)
            if store.get(store.key(rel, own, data), {}) is None]
    made = map_in_workers(_new_scan_or_error, [(rel, data, own) for _index, rel, data in jobs],
                          [len(data) for _index, _rel, data in jobs]) if len(jobs) > 1 else None
    fresh: list = [None] * len(first)
    for (index, _rel, _data), result in zip(jobs, made or ()):
        fresh[index] = result
    return fresh
