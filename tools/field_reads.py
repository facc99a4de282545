"""How a release's own code reads each config field, found statically in its wheel (``megatron/core/**.py``).

Every ``<config>.<field>`` load is classified by its context:

- ``truthy``: the test of ``if``/``while``/``assert``/a conditional expression, under ``not``, or an operand of
  ``and``/``or`` that is itself read by truthiness;
- ``is_none``: compared with ``is``/``is not`` None;
- ``eq``: compared with ``==``/``!=``/``in``/``not in`` against constants;
- ``guarded``: inside a branch that runs only when the same expression is not None (``if x is not None:``, the
  ``else`` of ``if x is None:``, ``if x:``);
- ``text``: formatted into a string (an error message);
- ``passed``: passed on as keyword ``k=<expr>.<field>`` (or positionally, to ``super().__init__`` or a function
  the package defines once); the reads of parameter ``k`` in every function of the
  package that has one are classified the same way (once); ``passed_unread`` when no such function is found;
- ``other``: anything else (arithmetic, a positional argument, an assignment, an index ...).

The acceptances derived from these (``compat/data/type_acceptances.json``) are facts about a release, so they are
computed from the release's wheel rather than typed by hand. Tooling: run by ``tools/type_acceptances.py``.
"""
from __future__ import annotations

import ast
import zipfile
from collections import defaultdict
from dataclasses import dataclass

SAFE_FOR_NONE = frozenset({"truthy", "is_none", "eq", "guarded", "text", "passed"})


@dataclass(frozen=True)
class Read:
    path: str
    line: int
    kind: str

    def where(self) -> str:
        return f"{self.path}:{self.line} {self.kind}"


def _parents(tree: ast.AST) -> dict:
    out = {}
    for node in ast.walk(tree):
        for child in ast.iter_child_nodes(node):
            out[child] = node
    return out


def _is_none_const(node) -> bool:
    return isinstance(node, ast.Constant) and node.value is None


def _guards(test: ast.expr, branch: str) -> set[str]:
    """The expressions known to be not None (and truthy for a plain test) inside the ``body``/``orelse`` branch."""
    out = set()
    if isinstance(test, ast.BoolOp) and isinstance(test.op, ast.And) and branch == "body":
        for v in test.values:
            out |= _guards(v, branch)
        return out
    if isinstance(test, ast.BoolOp) and isinstance(test.op, ast.Or) and branch == "orelse":
        for v in test.values:
            out |= _guards(v, branch)
        return out
    if isinstance(test, ast.Compare) and len(test.ops) == 1 and _is_none_const(test.comparators[0]):
        op = test.ops[0]
        if (isinstance(op, ast.IsNot) and branch == "body") or (isinstance(op, ast.Is) and branch == "orelse"):
            out.add(ast.unparse(test.left))
        return out
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        return _guards(test.operand, "orelse" if branch == "body" else "body")
    if branch == "body" and isinstance(test, (ast.Attribute, ast.Name)):
        out.add(ast.unparse(test))
    return out


def _guarded(node: ast.AST, parents: dict) -> bool:
    text = ast.unparse(node)
    child, parent = node, parents.get(node)
    while parent is not None:
        if isinstance(parent, (ast.If, ast.While, ast.IfExp)):
            branch = None
            body = parent.body if isinstance(parent.body, list) else [parent.body]
            orelse = parent.orelse if isinstance(parent.orelse, list) else [parent.orelse]
            if child in body:
                branch = "body"
            elif child in orelse:
                branch = "orelse"
            if branch and text in _guards(parent.test, branch):
                return True
        if _checked_before(child, parent, text) or _class_invariant(parent, text):
            return True
        if isinstance(parent, ast.BoolOp) and isinstance(parent.op, ast.And):
            before = parent.values[:parent.values.index(child)] if child in parent.values else []
            if any(text in _guards(v, "body") for v in before):
                return True
        child, parent = parent, parents.get(parent)
    return False


def _checked_before(stmt: ast.AST, parent: ast.AST, text: str) -> bool:
    """An earlier statement of the same block asserts ``text`` (``assert x is not None``) or leaves the block
    unless it holds (``if x is None: raise``)."""
    for name in ("body", "orelse", "finalbody"):
        block = getattr(parent, name, None)
        if not isinstance(block, list) or stmt not in block:
            continue
        for before in block[:block.index(stmt)]:
            if isinstance(before, ast.Assert) and text in _guards(before.test, "body"):
                return True
            if isinstance(before, ast.If) and not before.orelse and before.body and \
                    isinstance(before.body[-1], (ast.Raise, ast.Return)) and text in _guards(before.test, "orelse"):
                return True
    return False


def _class_invariant(node: ast.AST, text: str) -> bool:
    """A class whose ``__init__`` asserts ``text`` at its top level (``assert self.config.q_lora_rank is not None``):
    every method of an object that was built runs with it holding."""
    if not isinstance(node, ast.ClassDef):
        return False
    init = next((n for n in node.body if isinstance(n, ast.FunctionDef) and n.name == "__init__"), None)
    return init is not None and any(isinstance(n, ast.Assert) and text in _guards(n.test, "body") for n in init.body)


def _truthy_context(node: ast.AST, parents: dict) -> bool:
    parent = parents.get(node)
    if isinstance(parent, (ast.If, ast.While, ast.IfExp, ast.Assert)) and parent.test is node:
        return True
    if isinstance(parent, ast.UnaryOp) and isinstance(parent.op, ast.Not):
        return True
    if isinstance(parent, ast.BoolOp):
        return _truthy_context(parent, parents)
    if isinstance(parent, ast.Call) and isinstance(parent.func, ast.Name) and parent.func.id == "bool":
        return True
    if isinstance(parent, ast.comprehension) and node in parent.ifs:
        return True
    return False


def classify(node: ast.AST, parents: dict) -> tuple[str, str | None]:
    """(kind, keyword) of one load; keyword is the parameter name for ``passed``."""
    if _truthy_context(node, parents):
        return "truthy", None
    parent = parents.get(node)
    if isinstance(parent, ast.Compare) and len(parent.ops) == 1:
        other = parent.comparators[0] if parent.left is node else parent.left
        if isinstance(parent.ops[0], (ast.Is, ast.IsNot)) and _is_none_const(other):
            return "is_none", None
        if isinstance(parent.ops[0], (ast.Eq, ast.NotEq, ast.In, ast.NotIn)) and \
                isinstance(other, (ast.Constant, ast.Tuple, ast.List, ast.Set)):
            return "eq", None
    if _guarded(node, parents):
        return "guarded", None
    if isinstance(parent, ast.FormattedValue):
        return "text", None
    if isinstance(parent, ast.keyword) and parent.arg:
        return "passed", parent.arg
    if isinstance(parent, ast.Call) and node in parent.args:
        return "positional", (parent, parent.args.index(node))
    return "other", None


class Package:
    """The parsed ``megatron/core`` modules of one wheel."""

    def __init__(self, wheel: str):
        self.trees: dict[str, ast.Module] = {}
        with zipfile.ZipFile(wheel) as zf:
            for name in zf.namelist():
                if name.startswith("megatron/core/") and name.endswith(".py"):
                    try:
                        self.trees[name] = ast.parse(zf.read(name))
                    except SyntaxError:
                        continue
        self.parents = {p: _parents(t) for p, t in self.trees.items()}
        self._functions: dict | None = None
        self._classes: dict | None = None
        self._defs: dict | None = None

    def attribute_loads(self, names: set[str], config_files: set[str]) -> dict[str, list[tuple[str, ast.AST]]]:
        """Loads of ``<a config>.<name>``: a receiver named ``*config``/``*cfg``, or ``self`` in a config's file
        (a module's own ``self.q_lora_rank`` is another value)."""
        out = defaultdict(list)
        for path, tree in self.trees.items():
            for node in ast.walk(tree):
                if isinstance(node, ast.Attribute) and node.attr in names and isinstance(node.ctx, ast.Load) \
                        and _config_receiver(node.value, path in config_files):
                    out[node.attr].append((path, node))
        return out

    def positional_parameter(self, call: ast.Call, index: int, path: str) -> str | None:
        """The parameter a positional argument binds: of ``super().__init__`` (the enclosing class's first base
        defined in the package) or of a function the package defines under one name only; else None."""
        func = call.func
        defs = []
        if isinstance(func, ast.Attribute) and func.attr == "__init__" and isinstance(func.value, ast.Call) \
                and ast.unparse(func.value.func) == "super":
            cls = self.parents[path].get(call)
            while cls is not None and not isinstance(cls, ast.ClassDef):
                cls = self.parents[path].get(cls)
            base = ast.unparse(cls.bases[0]).rsplit(".", 1)[-1] if cls is not None and cls.bases else None
            defs = [n for c in self.classes.get(base, ()) for n in c.body
                    if isinstance(n, ast.FunctionDef) and n.name == "__init__"]
            method = True
        elif isinstance(func, ast.Name):
            defs = [fn for p, fn in self.function_defs.get(func.id, ())]
            method = False
        if len(defs) != 1 or any(isinstance(a, ast.Starred) for a in call.args[:index + 1]):
            return None
        params = [a.arg for a in defs[0].args.posonlyargs + defs[0].args.args][1 if method else 0:]
        return params[index] if index < len(params) else None

    @property
    def classes(self) -> dict:
        if self._classes is None:
            self._classes = defaultdict(list)
            for tree in self.trees.values():
                for n in ast.walk(tree):
                    if isinstance(n, ast.ClassDef):
                        self._classes[n.name].append(n)
        return self._classes

    @property
    def function_defs(self) -> dict:
        """Module-level function name -> [(path, def)]."""
        if self._defs is None:
            self._defs = defaultdict(list)
            for path, tree in self.trees.items():
                for n in tree.body:
                    if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)):
                        self._defs[n.name].append((path, n))
        return self._defs

    def parameter_loads(self, param: str) -> list[tuple[str, ast.AST]]:
        if self._functions is None:
            self._functions = defaultdict(list)
            for path, tree in self.trees.items():
                for fn in ast.walk(tree):
                    if isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
                        a = fn.args
                        for arg in {x.arg for x in a.args + a.kwonlyargs + a.posonlyargs}:
                            self._functions[arg].append((path, fn))
        return [(path, node) for path, fn in self._functions.get(param, ()) for node in ast.walk(fn)
                if isinstance(node, ast.Name) and node.id == param and isinstance(node.ctx, ast.Load)]


def _config_receiver(node: ast.expr, config_file: bool) -> bool:
    text = ast.unparse(node).rsplit(".", 1)[-1].lower()
    return text.endswith(("config", "cfg")) or (config_file and text == "self")


def field_reads(pkg: Package, names: set[str], config_files: set[str]) -> dict[str, list[Read]]:
    """Field name -> every read of it, pass-throughs followed once per parameter name."""
    param_cache: dict[str, list[Read]] = {}

    def classify_in(path: str, node: ast.AST) -> tuple[str, str | None]:
        kind, detail = classify(node, pkg.parents[path])
        if kind == "positional":
            param = pkg.positional_parameter(*detail, path)
            return ("passed", param) if param else ("other", None)
        return kind, detail

    def param_reads(param: str) -> list[Read]:
        if param not in param_cache:
            param_cache[param] = []  # a parameter passed on under its own name is not followed again
            reads = []
            for path, node in pkg.parameter_loads(param):
                kind, kw = classify_in(path, node)
                onward = param_reads(kw) if kind == "passed" and kw != param else []
                unread = kind == "passed" and kw != param and not onward
                reads.append(Read(path, node.lineno, "passed_unread" if unread else kind))
                reads.extend(onward)
            param_cache[param] = reads
        return param_cache[param]

    out = {}
    for name, loads in pkg.attribute_loads(names, config_files).items():
        reads = []
        for path, node in loads:
            kind, kw = classify_in(path, node)
            onward = param_reads(kw) if kind == "passed" else []
            reads.append(Read(path, node.lineno, "passed_unread" if kind == "passed" and not onward else kind))
            reads.extend(onward)
        out[name] = reads
    return out


__all__ = ["Package", "Read", "SAFE_FOR_NONE", "classify", "field_reads"]
