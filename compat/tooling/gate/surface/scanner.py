# SPDX-License-Identifier: Apache-2.0
"""The project scan of one file: Python's scopes, bindings, imports, re-exports and the guards around each node;
what is a use of megatron is the detectors' business (``detectors/``, one module per rule family).

The scanner walks the module's statements and expressions once, in source order, keeping the scopes it is in
(``scopes.Scope``, with one ``FunctionContext``/``ClassContext`` per function or class body around), and the guard
stack (``push``; conditional branches: branch_guards.py). At each import, assignment, class, call, attribute and
name it calls the detectors' hooks (``detectors.visit_call`` and the like), which record uses through ``record``.
"""
from __future__ import annotations

import ast
import builtins
from collections import Counter
from dataclasses import dataclass, field

from ...ast_tools import child_nodes, dotted, statements
from . import detectors as d
from . import guards as g
from .bindings import scope_bindings
from .branch_guards import branch_guards
from .definitions import (
    absolute,
    bound_anywhere,
    decorated,
    is_megatron,
    method_lines,
    methods,
    module_functions,
    named_classes,
    only_splats,
    own_attributes,
    owned,
    project_callable,
    project_module,
)
from .detectors.class_values import class_values
from .fallbacks import optional_imports, protecting
from .forwarding import FORWARDER_WORDS, WORDS
from .instances import bound_names, bound_once, held_attributes, scope_instances
from .project_classes import BASES, CLASS_VALUES, FILE, MEGATRON_BASES, MEMBERS, METHOD_LINES, OPEN
from .providers import file_factories
from .scopes import ClassContext, Frame, FunctionContext, Scope, function_frame
from .spelling import Spelling
from .splats import dict_keys
from .uses import Use


@dataclass
class FileFacts:
    """What the scanner knows of its file before it walks it (the bindings of the module add its star imports)."""
    path: str
    own: tuple  # the project's own megatron packages (project modules like any other)
    tree: ast.Module
    module: str = ""
    is_package: bool = False
    walrus: bool = True  # the source has ``:=`` (else no expression needs walking for bindings)
    exports: dict = field(default_factory=dict)  # project module -> {name: megatron paths} it binds at module level
    forwarders: set = field(default_factory=set)  # functions that take only ``*args, **kwargs``
    defs: dict = field(default_factory=dict)  # the module's functions (definitions.module_functions)
    origins: dict = field(default_factory=dict)  # name -> "module.name" of its top-level project imports
    stars: list = field(default_factory=list)  # ``from megatron.x import *`` modules
    foreign_star: bool = False  # a star import from anywhere else: a free name may come from there
    file_names: set = field(default_factory=set)  # every name bound anywhere (read with megatron star imports)
    counts: dict = field(default_factory=dict)  # id(a scope's body) -> instances.bound_names of that scope
    imported_in_defs: dict | None = None  # detectors.replacements.imported_in_defs, read the first time asked


@dataclass(frozen=True)
class Hints:
    """What the source's spelling and its guards say before the walk: which lines can matter (spelling.py)."""
    supers: object = None  # the lines that spell ``super`` (None: every line may)
    flags: frozenset = frozenset()  # version flags (guards.version_flags)
    guard_lines: object = None
    import_flags: dict = field(default_factory=dict)  # guards.import_flags
    optional: list = field(default_factory=list)  # names a try/except ImportError makes optional (fallbacks.py)
    spelled: object = None  # the lines that may hold a use (None: every line may; quiet())


class FileScanner:
    def __init__(self, path: str, tree: ast.Module, own: tuple, versionish: bool = True,
                 exports: dict | None = None, walrus: bool = True, source: bytes | None = None):
        module, is_package = project_module(path)
        self.file = FileFacts(path, own, tree, module, is_package, walrus, exports or {})
        self.asked: set = set()  # (project module, name) of each ``from module import name`` (what exports bind)
        every = list(statements(tree.body, into_defs=True))
        spelling = Spelling(source) if source is not None else None
        self.hints = _hints(tree, every, spelling, versionish)
        self.file.forwarders = {n.name for n in every
                                if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and only_splats(n.args)}
        self.file.defs = module_functions(tree.body)
        self.forwarded: dict = {}  # functions that pass their **kwargs on to a megatron callee (forwarding.py)
        self.file.origins = dict(self.project_imports(statements(tree.body)))
        top = {node.name: node for node in tree.body if isinstance(node, ast.ClassDef)}
        self.classes = {name: {**methods(node), BASES: tuple(self.class_origin(b, top) for b in node.bases),
                               METHOD_LINES: method_lines(node), FILE: path}
                        for name, node in top.items()}
        self.factories = file_factories(tree.body, self.file.defs, project_callable,
                                        named_classes(tree, module, is_package, own))
        self.forwarding = False  # inside the targets of ``megatron.f = wrapper`` where wrapper(*args, **kwargs)
        self.scopes: list[Scope] = []
        self.functions: list[FunctionContext] = []
        self.class_stack: list[ClassContext] = []
        self.guards: list[tuple] = []
        self.module_probed: set = set()  # ``inspect.signature`` reads at module level (FunctionContext.probed)
        self.uses: list[Use] = []
        self.sets: set[str] = set()
        self.enter(scope_bindings(self, tree.body, ()))
        if self.file.stars and not self.file.foreign_star:
            self.file.file_names = bound_anywhere(tree)
        self.describe_classes(top)
        self.hints = _spelled(self.hints, spelling, self, self.forwarder_words())
        self.scopes[0].instances = scope_instances(tree.body, None, self.paths, walrus, self.project_class,
                                                   self.bound_in)
        self.scopes[0].dicts = (tree.body, None)
        self.block(tree.body)

    @property
    def path(self) -> str:
        return self.file.path

    @property
    def own(self) -> tuple:
        return self.file.own

    @property
    def module(self) -> str:
        return self.file.module

    def describe_classes(self, top: dict) -> None:
        """What project_classes.py needs of the top-level classes: their class values (detectors.class_values),
        megatron bases and own members (to type instances of project subclasses)."""
        for name, node in top.items():
            values = class_values(self, node)
            if values:
                self.classes[name][CLASS_VALUES] = values
        for name, node in top.items():
            entry = self.classes[name]
            entry[MEGATRON_BASES] = tuple(self.paths(b) for b in node.bases)
            closed = node.bases and all(p or m for p, m in zip(entry[BASES], entry[MEGATRON_BASES]))
            entry[MEMBERS] = own_attributes(node) if closed else OPEN  # an open class: never read

    def forwarder_words(self) -> set:
        """In a later round, the method names of the forwarders' classes: their calls are walked too."""
        if FORWARDER_WORDS not in self.file.exports:
            return set()
        self.asked.add((FORWARDER_WORDS, WORDS))
        return set(self.file.exports[FORWARDER_WORDS].get(WORDS, ()))

    def class_context(self, s: ast.ClassDef) -> ClassContext:
        bases = [self.paths(b) for b in s.bases]
        base = next((b for b in bases if b), None)
        only_megatron = bool(s.bases) and all(bases)  # a project mixin may set anything on self
        return ClassContext(s.name, base, (base[0], own_attributes(s)) if only_megatron else None,
                            held_attributes(s, self.paths))

    # ---- scopes --------------------------------------------------------------------------------------------
    def enter(self, names: dict, is_class: bool = False) -> Scope:
        """A new scope; a function's body does not see the class bodies around it (Python's rule)."""
        outer = next((s.bound for s in reversed(self.scopes) if not s.is_class), set())
        if is_class and self.scopes:
            outer = self.scopes[-1].bound
        scope = Scope(names, is_class, (outer - set(names)) | {n for n, v in names.items() if v})
        self.scopes.append(scope)
        return scope

    def leave(self) -> None:
        self.scopes.pop()

    @property
    def probed(self) -> set:
        """The megatron callables ``inspect.signature`` reads in the innermost function (or the module)."""
        return self.functions[-1].probed if self.functions else self.module_probed

    @property
    def innermost_class(self) -> ClassContext | None:
        return self.class_stack[-1] if self.class_stack else None

    # ---- names ---------------------------------------------------------------------------------------------
    def scope_of(self, name: str) -> Scope | None:
        """The innermost scope that binds ``name`` among those it is looked up in (class bodies only when they are
        innermost), or None."""
        scopes = self.scopes
        last = len(scopes) - 1
        for index in range(last, -1, -1):
            scope = scopes[index]
            if name in scope.names and (index == last or not scope.is_class):
                return scope
        return None

    def at_module(self, name: str) -> bool:
        """``name`` is bound by no scope inside the module that it is looked up in (the module's own, or none)."""
        scope = self.scope_of(name)
        return scope is None or scope is self.scopes[0]

    def lookup(self, name: str):
        scope = self.scope_of(name)
        return scope.names[name] if scope is not None else None

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
        facts = self.file
        if not facts.stars or facts.foreign_star or name in facts.file_names or hasattr(builtins, name) or \
                self.scope_of(name) is not None:
            return None
        return tuple(f"{m}.{name}" for m in facts.stars)

    def absolute(self, s: ast.ImportFrom) -> str:
        """The module a ``from X import`` reads, relative imports resolved against this file's module."""
        return absolute(s, self.file.module, self.file.is_package)

    def module_of(self) -> tuple[str, bool]:
        return self.file.module, self.file.is_package

    def module_exports(self) -> dict:
        """The megatron names this file binds at module level (what ``from this_module import x`` gets)."""
        return {name: paths for name, paths in self.scopes[0].names.items() if paths}

    def project_imports(self, stmts) -> list[tuple[str, str]]:
        """(bound name, "module.name") of each ``from X import name`` of ``stmts`` that is not a megatron import."""
        return [(a.asname or a.name, f"{self.absolute(s)}.{a.name}") for s in stmts
                if isinstance(s, ast.ImportFrom) and not (s.level == 0 and is_megatron(s.module, self.file.own))
                for a in s.names]

    def class_origin(self, node, top: dict) -> str | None:
        """``module.Class`` of a base written as a name of this file's top-level classes or of its imports."""
        if not isinstance(node, ast.Name):
            return None
        return f"{self.file.module}.{node.id}" if node.id in top else self.file.origins.get(node.id)

    def project_class(self, node) -> str | None:
        """``module.Class`` of a project class a name denotes (defined at the top of this file or imported)."""
        if not isinstance(node, ast.Name) or self.lookup(node.id) or not self.at_module(node.id):
            return None
        if node.id in self.classes:
            return f"{self.file.module}.{node.id}"
        return self.file.origins.get(node.id)

    def instance_of(self, name: str) -> tuple | None:
        """The megatron classes ``name`` holds an instance of, in the innermost scope that binds it."""
        scope = self.scope_of(name)
        return (scope.instances or {}).get(name) if scope is not None else None

    def dict_keys_of(self, name: str) -> tuple:
        """The keys certain to be in the dict ``name`` holds, in the innermost scope that binds it."""
        scope = self.scope_of(name)
        if scope is None:
            return ()
        known = scope.dicts
        if isinstance(known, tuple):
            known = scope.dicts = dict_keys(*known, self.file.walrus, self.bound_in)
        return (known or {}).get(name, ())

    def bound_in(self, body: list, args) -> Counter:
        """instances.bound_names of one scope, counted once for all that ask (instances, dict splats, once())."""
        counts = self.file.counts.get(id(body))
        if counts is None:
            counts = self.file.counts[id(body)] = bound_names(body, args, self.file.walrus)
        return counts

    def once(self) -> dict:
        """The innermost function's names bound once and their values (instances.bound_once), read the first time
        asked."""
        context = self.functions[-1] if self.functions else None
        known = context.once if context is not None else {}
        if isinstance(known, tuple):
            known = context.once = bound_once(known[0], self.bound_in(*known))
        return known

    def function_signature(self, name: str) -> str:
        """The signature of the function ``name`` denotes here ("" when it is not one function of this file)."""
        scope = self.scope_of(name)
        defs = self.file.defs if scope is None or scope is self.scopes[0] else (scope.local_defs or {})
        return defs.get(name) or ""

    # ---- recording -----------------------------------------------------------------------------------------
    def record(self, node, paths, how: str, *, rule: str, **extra) -> None:
        paths = tuple(p for p in paths if not owned(p, self.file.own))
        if not paths:
            return
        guards = tuple(self.guards)
        if self.hints.optional:
            guards += tuple(protecting(self.hints.optional, node.lineno, paths[0]))
        if how == "call" and paths[0] in self.probed:
            guards += ((g.SIGNATURE, node.lineno, None, None),)
        self.uses.append(Use(self.file.path, node.lineno, paths[0], how, guards, paths[1:],
                             top=all(s.is_class for s in self.scopes[1:]), rule=rule, **extra))

    def push(self, kind, line, detail=None, note: str | None = None) -> None:
        self.guards.append((kind, line, frozenset(detail) if detail is not None else None, note))

    # ---- statements ----------------------------------------------------------------------------------------
    def block(self, body: list) -> None:
        pushed = 0
        for stmt in body:
            self.stmt(stmt)
            if isinstance(stmt, ast.If) and g.exits(stmt.body):
                _then, rest = branch_guards(self, stmt.test)  # ``if not has_x: return`` guards the rest
                if rest and rest[0] not in (g.TYPE_CHECKING, g.DEAD):
                    self.push(rest[0], stmt.lineno, rest[1])
                    pushed += 1
        del self.guards[len(self.guards) - pushed:]

    def branches(self, test, line: int, parts: tuple, visit) -> None:
        """``test``, then each part of a conditional (body, else) visited under the guard its branch gives."""
        self.expr(test)
        for guard, part in zip(branch_guards(self, test), parts):
            if guard:
                self.push(guard[0], line, guard[1])
            visit(part)
            if guard:
                self.guards.pop()

    def stmt(self, s) -> None:
        visit = _STATEMENTS.get(type(s))
        if visit is not None:
            visit(self, s)
        else:
            for child in child_nodes(s):
                if isinstance(child, ast.stmt):
                    self.stmt(child)
                else:
                    self.expr(child)

    def import_(self, s) -> None:
        d.visit_import(self, s)

    def try_(self, s) -> None:
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

    def if_(self, s) -> None:
        self.branches(s.test, s.lineno, (s.body, s.orelse), self.block)

    def assign(self, s) -> None:
        d.visit_assign(self, s)
        self.expr(s.value)
        self.forwarding = d.forwards(self, s.value)
        for t in s.targets:
            self.expr(t)
            d.visit_assign_target(self, s, t)
        self.forwarding = False

    def with_(self, s) -> None:
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

    def def_(self, s) -> None:
        for node in s.decorator_list + s.args.defaults + [k for k in s.args.kw_defaults if k is not None]:
            self.expr(node)
        self.function(s, s.body)

    def class_(self, s) -> None:
        for node in s.decorator_list + s.bases + [k.value for k in s.keywords]:
            self.expr(node)
        context = self.class_context(s)
        self.class_stack.append(context)
        d.visit_class(self, s, context)
        self.enter(scope_bindings(self, s.body, ()), is_class=True)
        self.block(s.body)
        self.leave()
        self.class_stack.pop()

    def for_(self, s) -> None:
        self.expr(s.target)
        self.expr(s.iter)
        self.block(s.body)
        self.block(s.orelse)

    def match(self, s) -> None:
        self.expr(s.subject)
        for case in s.cases:
            self.block(case.body)

    # ---- functions -----------------------------------------------------------------------------------------
    def quiet(self, node) -> bool:
        """A function that spells no name bound to megatron (in the module: no enclosing function binds one), no
        capitalised name of a project class it may hold (project_classes.py), no ``megatron``, no ``import`` and no
        ``submodules`` (a spec edit), outside any class with a megatron base or an ``__init__`` that keeps a
        megatron instance on ``self``, in a file without megatron star imports: nothing in it can be a use, so it
        is not walked. A new kind of use that needs none of these (say,
        a megatron object kept on ``self`` in another method) must make this False where it can occur, with its case
        in tests/surface/test_scan_speed.py's CASES (the prefilters against the full walk)."""
        context = self.innermost_class
        if self.hints.spelled is None or self.file.stars or (context and (context.base or context.held)):
            return False
        module_bound = self.scopes[0].bound
        if any(not scope.bound <= module_bound for scope in self.scopes[1:]):
            return False
        return not self.hints.spelled.spans(node)

    def function(self, node, body) -> None:
        if isinstance(body, list) and self.quiet(node):
            return
        args = node.args
        params = [a.arg for a in args.posonlyargs + args.args + args.kwonlyargs]
        params += [a.arg for a in (args.vararg, args.kwarg) if a is not None]
        saved = self.guards
        self.guards = [x for x in saved if x[0] != g.TRY]  # the body runs later, outside any enclosing try
        method = bool(isinstance(body, list) and self.scopes and self.scopes[-1].is_class and args.args)
        context = self.function_context(node, body, method)
        scope = self.enter(scope_bindings(self, body if isinstance(body, list) else [ast.Expr(body)], params))
        if isinstance(body, list):
            scope.local_defs = module_functions(body, self.function_signature)
            scope.instances = scope_instances(body, args, self.paths, self.file.walrus, self.project_class,
                                              self.bound_in)
            scope.dicts = (body, args)  # read with dict_keys on a ``**name`` call only
        self.functions.append(context)
        if isinstance(body, list):
            self.block(body)
        else:
            self.expr(body)
        self.functions.pop()
        self.leave()
        self.guards = saved

    def function_context(self, node, body, method: bool) -> FunctionContext:
        """What a function body's scan needs to know of the function (computed before its scope is entered)."""
        args = node.args
        context = self.innermost_class
        plain = not decorated(node, ("staticmethod", "classmethod"))
        frame = Frame()
        top = len(self.scopes) == 1 or (len(self.scopes) == 2 and self.scopes[1].is_class)
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and not self.functions and top:
            frame = function_frame(node, body, plain, self.file.module,
                                   context.name if len(self.scopes) == 2 else None)
        top_class = len(self.class_stack) == 1 and self.class_stack[0].name in self.classes
        return FunctionContext(
            frame,
            self_names=(args.args[0].arg, context.instance) if method and context.instance else None,
            held_self=(args.args[0].arg, context.held) if method and plain else None,
            owner=(args.args[0].arg, f"{self.file.module}.{self.class_stack[0].name}")
            if method and plain and top_class else None,
            once=(body, args) if isinstance(body, list) else {})

    # ---- expressions ---------------------------------------------------------------------------------------
    def expr(self, e) -> None:
        kind = type(e)  # node types are compared by identity: the parser makes no subclasses of them
        if kind in _LEAVES:
            return
        visit = _EXPRESSIONS.get(kind)
        if visit is not None:
            visit(self, e)
        else:
            for child in child_nodes(e):
                self.expr(child)

    def attribute(self, e) -> None:
        if not d.visit_attribute(self, e):
            self.expr(e.value)

    def call(self, e: ast.Call) -> None:
        d.visit_call(self, e)
        for a in e.args:
            self.expr(a)
        for k in e.keywords:
            self.expr(k.value)

    def bool_op(self, e) -> None:
        pushed = 0
        for value in e.values:
            self.expr(value)
            then, other = branch_guards(self, value)
            guard = other if isinstance(e.op, ast.Or) else then  # ``a or b``: b runs where a is false
            if guard:
                self.push(guard[0], e.lineno, guard[1])
                pushed += 1
        del self.guards[len(self.guards) - pushed:]

    def if_exp(self, e) -> None:
        self.branches(e.test, e.lineno, (e.body, e.orelse), self.expr)

    def lambda_(self, e) -> None:
        for default in e.args.defaults:
            self.expr(default)
        self.function(e, e.body)

    def name(self, e) -> None:
        d.visit_name(self, e)

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


def _hints(tree: ast.Module, every: list, spelling: Spelling | None, versionish: bool) -> Hints:
    flags = g.version_flags(tree, every, spelling) if versionish else set()
    return Hints(spelling.lines(words=("super",)) if spelling is not None else None, flags,
                 g.guard_lines(spelling, flags) if spelling is not None else None,
                 g.import_flags(tree, every), optional_imports(tree, every))


def _spelled(hints: Hints, spelling: Spelling | None, scan: FileScanner, words: set) -> Hints:
    """The hints with the lines that may hold a use: a name bound to megatron, or a function that names a project
    class (it may hold an instance of a project subclass of a megatron class, or a class attribute bound to a
    class: ``self.ConfigClass(**d)``), or one of the forwarders' method names (a later round)."""
    if spelling is None:
        return hints
    classlike = {name for name in (*scan.file.origins, *scan.classes) if name[:1].isupper()} | {
        attr for entry in scan.classes.values() for attr in entry.get(CLASS_VALUES, ())}
    classlike |= words
    spelled = spelling.lines(words=scan.scopes[0].bound | classlike, anywhere=("megatron", "import", "submodules"))
    return Hints(hints.supers, hints.flags, hints.guard_lines, hints.import_flags, hints.optional, spelled)


_STATEMENTS = {ast.Import: FileScanner.import_, ast.ImportFrom: FileScanner.import_, ast.Try: FileScanner.try_,
               ast.If: FileScanner.if_, ast.While: FileScanner.if_, ast.Assign: FileScanner.assign,
               ast.With: FileScanner.with_, ast.AsyncWith: FileScanner.with_, ast.FunctionDef: FileScanner.def_,
               ast.AsyncFunctionDef: FileScanner.def_, ast.ClassDef: FileScanner.class_, ast.For: FileScanner.for_,
               ast.AsyncFor: FileScanner.for_}
if hasattr(ast, "Match"):
    _STATEMENTS[ast.Match] = FileScanner.match
if hasattr(ast, "TryStar"):
    _STATEMENTS[ast.TryStar] = FileScanner.try_
_EXPRESSIONS = {ast.Attribute: FileScanner.attribute, ast.Call: FileScanner.call, ast.BoolOp: FileScanner.bool_op,
                ast.IfExp: FileScanner.if_exp, ast.Lambda: FileScanner.lambda_, ast.Name: FileScanner.name,
                ast.ListComp: FileScanner.comprehension, ast.SetComp: FileScanner.comprehension,
                ast.GeneratorExp: FileScanner.comprehension, ast.DictComp: FileScanner.comprehension}
# expression nodes with nothing below them that the scan reads: None (an absent child), constants, contexts, operators
_LEAVES = frozenset({type(None), ast.Constant, *(kind for family in (ast.expr_context, ast.operator, ast.boolop,
                                                                    ast.unaryop, ast.cmpop)
                                                 for kind in family.__subclasses__())})
