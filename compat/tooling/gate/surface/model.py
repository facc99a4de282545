# SPDX-License-Identifier: Apache-2.0
"""A static model of a candidate's ``megatron`` package, built with ``ast`` (nothing imported or executed).

The model is plain JSON data, so that it can be cached per wheel:

- ``modules``: dotted module name -> ``{"p": is a package, "n": {name: [binding, ...]}, "star": [module, ...],
  "ga": has a module-level ``__getattr__``, "dep": {name: deprecation note}, "all": [names] or absent}``.
  Directories without ``__init__.py`` and compiled extensions are modules too (the latter open: ``ga``).
- ``classes``: qualified name -> ``{"m": module, "b": [base expression, ...], "a": {attr: [binding, ...]},
  "dc": dataclass fields or absent, "dep": {attr: note}, "ga": has ``__getattr__``, "enum": [member, ...],
  "sc": {method: ["caller@call shape", ...]}}``: ``sc`` is how the class's own methods call ``self.method(...)``
  (what a subclass's override of it receives, as long as the subclass does not replace the caller too).
- a module's ``"pc"``: ``{function: {parameter: {"c": [call shape, ...], "f": ["callee slot", ...]}}}``: how a
  module-level function calls a parameter it was passed (``model_provider_func(pre_process=...)``), and where it
  hands the parameter on (``"get_model 0"`` positional slot 0, ``"get_model =model_provider_func"`` a keyword).
  A call shape is ``N|kw,kw``: N positional arguments and the keywords; calls with a ``*``/``**`` splat are left out.
  A keyword passed only under a condition (one branch's call, a ``**`` dict's key set under an ``if``) is marked
  as such after a tab (conditions.py).

A binding is a short string (JSON of strings parses several times faster than nested lists, and 26 cached models
are read on every run): ``c QUALNAME`` class, ``f HOW SIGNATURE`` function (HOW: ``m`` method, ``s`` static,
``c`` classmethod, ``p`` property, ``f`` plain function), ``m MODULE`` ``import a.b as c``, ``i MODULE NAME``
``from MODULE import NAME``, ``a DOTTED`` an alias (``mpu = parallel_state``), ``v`` any other value. A name bound
in several branches (``try/except ImportError``, ``if HAVE_TE:``) keeps every binding (then a list): the union
is what some environment sees.

A signature is ``VA KW|name:kind:has_default,...`` (``01|self:1:0,x:2:1``) with kind 0 positional-only,
1 positional-or-keyword, 2 keyword-only; VA/KW say whether ``*args``/``**kwargs`` are accepted. Dataclass fields
are ``name:has_default:in_init:kw_only,...``.
"""
from __future__ import annotations

import ast
import re
from pathlib import PurePosixPath

from ....errors import CandidateError, shown
from ...ast_tools import dotted, statements, walk
from ...pysource import (
    MAX_FILE_BYTES,
    MAX_FILE_TOKENS,
    SourceBudget,
    SourceTooLargeError,
    SourceUnparsableError,
    parse_source,
    size_of,
)
from .conditions import plain_call, shapes_of

MODEL_FORMAT = 12  # 11: cached lazily, module by module (lazy_model.LazyModel.state); 12: call shapes carry the
#   conditions a keyword is passed under (conditions.py)
MAX_PATH_DEPTH = 32  # directories in a member's path under megatron/ (real wheels: 7)
PACKAGE = "megatron"
_EXTENSION_SUFFIXES = (".so", ".pyd")
_DATACLASS_DECORATORS = {"dataclass", "dataclasses.dataclass"}
_NOTE_WIDTH = 200
# "Deprecated property - use ...", ".. deprecated::", "This function is deprecated"; not "warns about deprecated x"
_DEPRECATED_DOC = re.compile(r"^\W*deprecated\b|\b(is|are|been|now) deprecated\b", re.IGNORECASE)


# The model's JSON keys, short because every run reads 26 cached models; spelled only through these names.
IS_PACKAGE, NAMES, STAR, ALL = "p", "n", "star", "all"  # a module
MODULE, BASES, ATTRS, DATACLASS = "m", "b", "a", "dc"  # a class
HAS_GETATTR, DEPRECATED = "ga", "dep"  # a module or a class
DC_INIT, DC_FIELDS = "init", "f"  # a class's dataclass entry
SELF_CALLS, PARAM_CALLS = "sc", "pc"  # a class's self.method(...) calls; a module's calls of function parameters
SPEC_BUILT = "sb"  # a class's ``self.x = build_module(submodules.key, ...)``: {key: [x, [call shapes]]}
CALLED, HANDED_ON = "c", "f"  # a parameter's entry in PARAM_CALLS
# A parsed signature (``parse_signature``): its parameters and whether it takes *args / **kwargs.
PARAMS, VARARGS, VARKW = "p", "va", "kw"


def module_name(path: str) -> tuple[str, bool]:
    """``megatron/core/x/__init__.py`` -> (``megatron.core.x``, True); ``megatron/core/y.py`` -> (..., False)."""
    parts = list(PurePosixPath(path).parts)
    last = parts[-1]
    if last == "__init__.py":
        return ".".join(parts[:-1]), True
    stem = last.split(".", 1)[0]  # helpers_cpp.cpython-312-x86_64-linux-gnu.so -> helpers_cpp
    return ".".join(parts[:-1] + [stem]), False


def signature(args: ast.arguments) -> str:
    positional = args.posonlyargs + args.args
    first_default = len(positional) - len(args.defaults)
    params = [f"{a.arg}:{0 if i < len(args.posonlyargs) else 1}:{int(i >= first_default)}"
              for i, a in enumerate(positional)]
    params += [f"{a.arg}:2:{int(d is not None)}" for a, d in zip(args.kwonlyargs, args.kw_defaults)]
    return f"{int(args.vararg is not None)}{int(args.kwarg is not None)}|{','.join(params)}"


def parse_signature(text: str) -> dict:
    """``{"p": [[name, kind, has_default], ...], "va": 0/1, "kw": 0/1}`` from the compact form."""
    flags, _, params = text.partition("|")
    out = []
    for item in params.split(",") if params else []:
        name, kind, default = item.split(":")
        out.append([name, int(kind), int(default)])
    return {PARAMS: out, VARARGS: int(flags[0]), VARKW: int(flags[1])}


def parse_fields(text: str) -> list:
    """[[name, has_default, in_init, kw_only], ...] from the compact dataclass field list."""
    out = []
    for item in text.split(",") if text else []:
        name, *flags = item.split(":")
        out.append([name] + [int(x) for x in flags])
    return out


def bindings(value) -> list[str]:
    """A model entry's bindings as a list (a single binding is stored as a bare string)."""
    return [value] if isinstance(value, str) else list(value or [])


def _compact(names: dict) -> dict:
    return {k: v[0] if len(v) == 1 else v for k, v in names.items()}


def _const_text(node) -> str | None:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.JoinedStr):
        return "".join(v.value if isinstance(v, ast.Constant) else "{…}" for v in node.values)
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        left, right = _const_text(node.left), _const_text(node.right)
        return (left or "") + (right or "") if left is not None or right is not None else None
    return None


def _note(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= _NOTE_WIDTH else text[:_NOTE_WIDTH] + "…"


def _deprecation(node) -> str | None:
    """A note when a def/class says it is deprecated: decorator, docstring's first line, or a leading warn/raise."""
    for deco in getattr(node, "decorator_list", []):
        name = dotted(deco.func if isinstance(deco, ast.Call) else deco) or ""
        if "deprecat" in name.lower():
            return _note(f"@{name}")
    doc = ast.get_docstring(node, clean=True)
    if doc and _DEPRECATED_DOC.search(doc.strip().splitlines()[0]):
        return _note(doc.strip().splitlines()[0])
    body = node.body[1:] if doc else node.body
    for stmt in body[:3]:
        call = stmt.value if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call) else None
        if isinstance(stmt, ast.Raise) and isinstance(stmt.exc, ast.Call):
            call = stmt.exc
        if call is None:
            continue
        texts = [t for t in (_const_text(a) for a in call.args) if t]
        categories = [dotted(a) or "" for a in list(call.args) + [k.value for k in call.keywords]]
        warn = (dotted(call.func) or "").split(".")[-1] == "warn"
        if any("deprecat" in t.lower() for t in texts) or (warn and any("Deprecation" in c for c in categories)):
            return _note(texts[0] if texts else "warns DeprecationWarning")
    return None


def _module_warns_deprecation(tree: ast.Module) -> tuple[str | None, list[str]]:
    """A module-level DeprecationWarning: (note, the names the statements after it bind). A warning followed by
    imports (``warn("the following imports ... will be removed"); from .x import A, B``) is about those names,
    not about every import from the package; with nothing bound after it, it is about the module."""
    for index, stmt in enumerate(tree.body):
        if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call):
            call = stmt.value
            if (dotted(call.func) or "").split(".")[-1] != "warn":
                continue
            texts = [t for t in (_const_text(a) for a in call.args) if t]
            categories = [dotted(a) or "" for a in list(call.args) + [k.value for k in call.keywords]]
            if any("Deprecation" in c for c in categories) or any("deprecat" in t.lower() for t in texts):
                after = [name for later in tree.body[index + 1:] for name in _imported_names(later)]
                return _note(texts[0] if texts else "module warns DeprecationWarning on import"), after
    return None, []


def _imported_names(stmt) -> list[str]:
    if isinstance(stmt, ast.ImportFrom):
        return [a.asname or a.name for a in stmt.names if a.name != "*"]
    if isinstance(stmt, ast.Import):
        return [(a.asname or a.name).split(".")[0] for a in stmt.names]
    return []


def _is_type_checking(test) -> bool:
    return (dotted(test) or "").split(".")[-1] == "TYPE_CHECKING"


def _absolute(module: str, is_package: bool, level: int, target: str | None) -> str:
    if level == 0:
        return target or ""
    base = module.split(".") if is_package else module.split(".")[:-1]
    base = base[: len(base) - (level - 1)] if level > 1 else base
    return ".".join(base + ([target] if target else []))


class _Scope:
    """Collects the bindings of one module or class body (not descending into defs)."""

    def __init__(self, model: dict, module: str, is_package: bool, qual: str):
        self.model, self.module, self.is_package, self.qual = model, module, is_package, qual
        self.names: dict[str, list] = {}
        self.dep: dict[str, str] = {}
        self.star: list[str] = []
        self.all: list[str] | None = None
        self.all_open = False  # an __all__ extension we could not read: every public name is exported
        self.getattr = False
        self.param_calls: dict[str, dict] = {}

    def bind(self, name: str, binding: str) -> None:
        known = self.names.setdefault(name, [])
        if binding not in known:
            known.append(binding)

    def bind_target(self, target, value=None) -> None:
        if isinstance(target, ast.Name):
            alias = dotted(value) if value is not None else None
            self.bind(target.id, f"a {alias}" if alias and alias != target.id else "v")
        elif isinstance(target, (ast.Tuple, ast.List)):
            for elt in target.elts:
                self.bind_target(elt.value if isinstance(elt, ast.Starred) else elt)

    def visit_block(self, body: list, in_class: bool = False) -> None:
        for stmt in body:
            self.visit(stmt, in_class)

    def visit(self, stmt, in_class: bool) -> None:
        visit = _SCOPE_STATEMENTS.get(type(stmt))
        if visit is not None:
            visit(self, stmt, in_class)

    def visit_import(self, stmt, in_class: bool) -> None:
        for alias in stmt.names:
            if alias.asname:
                self.bind(alias.asname, f"m {alias.name}")
            else:
                self.bind(alias.name.split(".")[0], f"m {alias.name.split('.')[0]}")

    def visit_import_from(self, stmt, in_class: bool) -> None:
        source = _absolute(self.module, self.is_package, stmt.level, stmt.module)
        for alias in stmt.names:
            if alias.name == "*":
                self.star.append(source)
            else:
                self.bind(alias.asname or alias.name, f"i {source} {alias.name}")

    def visit_class(self, stmt, in_class: bool) -> None:
        qual = f"{self.qual}.{stmt.name}"
        _index_class(self.model, self.module, self.is_package, qual, stmt)
        self.bind(stmt.name, f"c {qual}")
        note = _deprecation(stmt)
        if note:
            self.dep[stmt.name] = note

    def visit_assign(self, stmt, in_class: bool) -> None:
        for target in stmt.targets:
            self.bind_target(target, stmt.value)
            if isinstance(target, ast.Name) and target.id == "__all__":
                self.all = _literal_names(stmt.value)
                self.all_open = self.all is None

    def visit_ann_assign(self, stmt, in_class: bool) -> None:
        if stmt.value is not None or in_class:
            self.bind_target(stmt.target, stmt.value)

    def visit_aug_assign(self, stmt, in_class: bool) -> None:
        if isinstance(stmt.target, ast.Name) and stmt.target.id == "__all__":
            self.extend_all(_literal_names(stmt.value))
        self.bind_target(stmt.target)

    def visit_expr(self, stmt, in_class: bool) -> None:
        if isinstance(stmt.value, ast.Call):
            self.all_call(stmt.value)

    def visit_if(self, stmt, in_class: bool) -> None:
        if not _is_type_checking(stmt.test):  # TYPE_CHECKING imports are not bound at run time
            self.visit_block(stmt.body, in_class)
        self.visit_block(stmt.orelse, in_class)

    def visit_try(self, stmt, in_class: bool) -> None:
        self.visit_block(stmt.body, in_class)
        for handler in stmt.handlers:
            self.visit_block(handler.body, in_class)
        self.visit_block(stmt.orelse, in_class)
        self.visit_block(stmt.finalbody, in_class)

    def visit_loop(self, stmt, in_class: bool) -> None:
        if not isinstance(stmt, ast.While):
            self.bind_target(stmt.target)
        self.visit_block(stmt.body, in_class)
        self.visit_block(stmt.orelse, in_class)

    def visit_with(self, stmt, in_class: bool) -> None:
        for item in stmt.items:
            if item.optional_vars is not None:
                self.bind_target(item.optional_vars)
        self.visit_block(stmt.body, in_class)

    def extend_all(self, names: list[str] | None) -> None:
        """``__all__ += [...]``; an extension we cannot read leaves ``__all__`` open (every public name), so that
        a star import never loses a name the candidate exports."""
        if names is None:
            self.all, self.all_open = None, True
        elif not self.all_open:
            self.all = (self.all or []) + names

    def all_call(self, call: ast.Call) -> None:
        """``__all__.append("x")`` and ``__all__.extend([...])``."""
        func = call.func
        if not (isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) and func.value.id == "__all__"):
            return
        if func.attr == "append" and len(call.args) == 1:
            arg = call.args[0]
            self.extend_all([arg.value] if isinstance(arg, ast.Constant) and isinstance(arg.value, str) else None)
        elif func.attr == "extend" and len(call.args) == 1:
            self.extend_all(_literal_names(call.args[0]))
        elif func.attr in ("insert", "extend", "__iadd__"):
            self.extend_all(None)

    def add_function(self, node, in_class: bool) -> None:
        how = "f"
        decorators = [dotted(d.func if isinstance(d, ast.Call) else d) or "" for d in node.decorator_list]
        if in_class:
            how = "m"
            for name in decorators:
                tail = name.split(".")[-1]
                if tail == "staticmethod":
                    how = "s"
                elif tail == "classmethod":
                    how = "c"
                elif tail in ("property", "cached_property") or tail in ("setter", "getter", "deleter"):
                    how = "p"
        if any(name.split(".")[-1] == "overload" for name in decorators):
            return  # the implementation that follows carries the real signature
        if node.name == "__getattr__":
            self.getattr = True
        self.bind(node.name, f"f {how} {signature(node.args)}")
        if not in_class:
            calls = _param_calls(node)
            if calls:
                self.param_calls[node.name] = calls
        note = _deprecation(node)
        if note:
            self.dep[node.name] = note


_SCOPE_STATEMENTS = {ast.Import: _Scope.visit_import, ast.ImportFrom: _Scope.visit_import_from,
                     ast.FunctionDef: _Scope.add_function, ast.AsyncFunctionDef: _Scope.add_function,
                     ast.ClassDef: _Scope.visit_class, ast.Assign: _Scope.visit_assign,
                     ast.AnnAssign: _Scope.visit_ann_assign, ast.AugAssign: _Scope.visit_aug_assign,
                     ast.Expr: _Scope.visit_expr, ast.If: _Scope.visit_if, ast.Try: _Scope.visit_try,
                     ast.For: _Scope.visit_loop, ast.AsyncFor: _Scope.visit_loop, ast.While: _Scope.visit_loop,
                     ast.With: _Scope.visit_with, ast.AsyncWith: _Scope.visit_with}
if hasattr(ast, "TryStar"):
    _SCOPE_STATEMENTS[ast.TryStar] = _Scope.visit_try


def calls_in(node) -> list:
    """The calls under ``node`` in ``ast.walk``'s order (breadth first), remembered on the node: a method is read
    by its class's ``self`` calls and by its own parameter calls."""
    found = node.__dict__.get("_compat_calls")
    if found is None:
        found = node._compat_calls = walk(node, _CALLS, _NO_CALLS)
    return found


_CALLS = frozenset({ast.Call})
_NO_CALLS = frozenset({ast.Name, ast.Constant})  # hold no call: nothing below them is walked


def _param_calls(node) -> dict:
    """How a function calls the callables it is passed, and to whom it hands them on (the model's ``pc``)."""
    args = node.args
    params = {a.arg for a in args.posonlyargs + args.args + args.kwonlyargs}
    out: dict[str, dict] = {}
    sites: dict[str, list] = {}
    for call in calls_in(node):
        if isinstance(call.func, ast.Name) and call.func.id in params:
            plain = plain_call(call)
            if plain is not None:
                sites.setdefault(call.func.id, []).append((call, *plain, {}))
            continue
        callee = dotted(call.func)
        if callee is None or any(isinstance(a, ast.Starred) for a in call.args):
            continue
        slots = [(str(i), a) for i, a in enumerate(call.args)] + [("=" + k.arg, k.value) for k in call.keywords if k.arg]
        for slot, value in slots:
            if isinstance(value, ast.Name) and value.id in params:
                known = out.setdefault(value.id, {CALLED: [], HANDED_ON: []})[HANDED_ON]
                if f"{callee} {slot}" not in known:
                    known.append(f"{callee} {slot}")
    for param, found in sites.items():
        out.setdefault(param, {CALLED: [], HANDED_ON: []})[CALLED] = shapes_of(node, found)
    return out


def _self_calls(node: ast.ClassDef) -> dict:
    """``self.method(...)`` in the class's own methods: {method: ["caller@call shape", ...]} (the model's ``sc``)."""
    out: dict[str, list] = {}
    for item in node.body:
        if not isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)) or not item.args.args:
            continue
        self_name = item.args.args[0].arg
        sites: dict[str, list] = {}
        for call in calls_in(item):
            func = call.func
            if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) and func.value.id == self_name:
                plain = plain_call(call)
                if plain is not None:
                    sites.setdefault(func.attr, []).append((call, *plain, {}))
        for method, found in sites.items():
            known = out.setdefault(method, [])
            known += [f"{item.name}@{shape}" for shape in shapes_of(item, found) if f"{item.name}@{shape}" not in known]
    return {k: v for k, v in out.items() if v}


def init_method(node: ast.ClassDef):
    """The ``__init__`` a class body defines, when it takes ``self`` (else None)."""
    return next((i for i in node.body if isinstance(i, (ast.FunctionDef, ast.AsyncFunctionDef))
                 and i.name == "__init__" and i.args.args), None)


def _spec_built(node: ast.ClassDef) -> dict:
    """``self.x = build_module(submodules.key, <args>)`` in ``__init__``: {key: [x, [shape of <args>]]}. What the
    class does with ``self.x(...)`` is in its ``sc`` (``_self_calls``); a splat leaves the shape unknown."""
    init = init_method(node)
    sites: dict[str, list] = {}
    attrs: dict[str, str] = {}
    for stmt in statements(init.body) if init is not None else ():
        if not (isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.value, ast.Call)):
            continue
        target, call = stmt.targets[0], stmt.value
        if not (isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name)
                and target.value.id == init.args.args[0].arg and (dotted(call.func) or "").endswith("build_module")
                and call.args and isinstance(call.args[0], ast.Attribute)):
            continue
        key = call.args[0].attr
        attrs.setdefault(key, target.attr)
        keywords, origins = _expand_local_dict(init, call.keywords)
        plain = plain_call(ast.Call(call.func, call.args[1:], keywords))
        if plain is not None:
            sites.setdefault(key, []).append((call, *plain, origins))
    return {key: [attr, shapes_of(init, sites.get(key, []))] for key, attr in attrs.items()}


def _expand_local_dict(function, keywords: list) -> tuple[list, dict]:
    """``**kwargs`` of a dict the function builds itself (``kw = {}``, ``kw["k"] = v``, also under an ``if``) and uses
    nowhere else: one keyword per key it may hold, and key -> the statements that add it (where they stand tells
    when it is passed: conditions.py). Otherwise the keywords unchanged (the splat stays unknown) and no keys."""
    splats = [k for k in keywords if k.arg is None]
    if len(splats) != 1 or not isinstance(splats[0].value, ast.Name):
        return keywords, {}
    name, keys = splats[0].value.id, {}
    known = sum(isinstance(n, ast.keyword) and n.arg is None and isinstance(n.value, ast.Name) and n.value.id == name
                for n in ast.walk(function))  # every ``**name`` splat is a use that reads it
    splat_uses = known
    for stmt in statements(function.body):
        if not (isinstance(stmt, ast.Assign) and len(stmt.targets) == 1):
            continue
        target, value = stmt.targets[0], stmt.value
        if isinstance(target, ast.Name) and target.id == name and isinstance(value, ast.Dict) and all(
                isinstance(k, ast.Constant) and isinstance(k.value, str) for k in value.keys):
            for k in value.keys:
                keys.setdefault(k.value, []).append(stmt)
            known += 1
        elif isinstance(target, ast.Subscript) and isinstance(target.value, ast.Name) and target.value.id == name \
                and isinstance(target.slice, ast.Constant) and isinstance(target.slice.value, str):
            keys.setdefault(target.slice.value, []).append(stmt)
            known += 1
    if known == splat_uses or sum(isinstance(n, ast.Name) and n.id == name for n in ast.walk(function)) != known:
        return keywords, {}
    named = [k for k in keywords if k.arg is not None]
    added = {k: where for k, where in keys.items() if all(k != n.arg for n in named)}
    return named + [ast.keyword(arg=k, value=splats[0].value) for k in added], added


def _literal_names(node) -> list[str] | None:
    if isinstance(node, (ast.List, ast.Tuple)):
        return [e.value for e in node.elts if isinstance(e, ast.Constant) and isinstance(e.value, str)]
    return None


def _dataclass_options(node: ast.ClassDef) -> dict | None:
    for deco in node.decorator_list:
        call = deco if isinstance(deco, ast.Call) else None
        if (dotted(call.func if call else deco) or "") in _DATACLASS_DECORATORS:
            options = {k.arg: k.value for k in (call.keywords if call else [])}
            init = options.get("init")
            kw_only = options.get("kw_only")
            return {"init": not (isinstance(init, ast.Constant) and init.value is False),
                    "kw_only": isinstance(kw_only, ast.Constant) and kw_only.value is True}
    return None


def _field_call(value) -> dict:
    """What ``field(...)`` says: has a default, takes part in __init__, keyword-only."""
    if isinstance(value, ast.Call) and (dotted(value.func) or "").split(".")[-1] == "field":
        kw = {k.arg: k.value for k in value.keywords}
        init = kw.get("init")
        kw_only = kw.get("kw_only")
        return {"default": "default" in kw or "default_factory" in kw,
                "init": not (isinstance(init, ast.Constant) and init.value is False),
                "kw_only": isinstance(kw_only, ast.Constant) and kw_only.value is True}
    return {"default": value is not None, "init": True, "kw_only": None}


def _dataclass_fields(node: ast.ClassDef, class_kw_only: bool) -> str:
    """``name:has_default:in_init:kw_only,...`` in declaration order."""
    fields, kw_only = [], class_kw_only
    for stmt in node.body:
        if not (isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name)):
            continue
        annotation = ast.unparse(stmt.annotation)
        if annotation.split("[")[0].split(".")[-1] == "ClassVar":
            continue
        if annotation.split(".")[-1] == "KW_ONLY":
            kw_only = True
            continue
        info = _field_call(stmt.value)
        fields.append(f"{stmt.target.id}:{int(info['default'])}:{int(info['init'])}:"
                      f"{int(kw_only if info['kw_only'] is None else info['kw_only'])}")
    return ",".join(fields)


def _instance_attributes(node: ast.ClassDef) -> set[str]:
    """``self.x = ...`` in the class's methods (statement level: no need to walk every expression)."""
    names = set()
    for item in node.body:
        if not isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)) or not item.args.args:
            continue
        self_name = item.args.args[0].arg
        for sub in statements(item.body):
            targets = sub.targets if isinstance(sub, ast.Assign) else (
                [sub.target] if isinstance(sub, (ast.AnnAssign, ast.AugAssign)) else [])
            for t in targets:
                for elt in (t.elts if isinstance(t, (ast.Tuple, ast.List)) else [t]):
                    if isinstance(elt, ast.Attribute) and isinstance(elt.value, ast.Name) \
                            and elt.value.id == self_name:
                        names.add(elt.attr)
    return names


def _index_class(model: dict, module: str, is_package: bool, qual: str, node: ast.ClassDef) -> None:
    scope = _Scope(model, module, is_package, qual)
    scope.visit_block(node.body, in_class=True)
    for name in _instance_attributes(node):
        scope.bind(name, "v")
    entry = {MODULE: module, BASES: [b for b in (dotted(base) for base in node.bases) if b], ATTRS: _compact(scope.names)}
    if len([b for b in node.bases if dotted(b) is None]):
        entry[BASES].append("?")  # a base we cannot name (a call, a subscript): the class stays open
    options = _dataclass_options(node)
    if options is not None:
        entry[DATACLASS] = {DC_INIT: int(options["init"]), DC_FIELDS: _dataclass_fields(node, options["kw_only"])}
    if scope.dep:
        entry[DEPRECATED] = scope.dep
    if scope.getattr:
        entry[HAS_GETATTR] = 1
    calls = _self_calls(node)
    if calls:
        entry[SELF_CALLS] = calls
    built = _spec_built(node)
    if built:
        entry[SPEC_BUILT] = built
    previous = model["classes"].get(qual)
    model["classes"][qual] = merge_class(previous, entry) if previous else entry


def merge_class(old: dict, new: dict) -> dict:
    """A class defined in two branches (``if HAVE_TE: class X ... else: class X ...``): the union."""
    merged = dict(new)
    merged[BASES] = old[BASES] + [b for b in new[BASES] if b not in old[BASES]]
    attrs = {k: bindings(v) for k, v in old[ATTRS].items()}
    for name, value in new[ATTRS].items():
        known = attrs.setdefault(name, [])
        known.extend(b for b in bindings(value) if b not in known)
    merged[ATTRS] = _compact(attrs)
    for key in (HAS_GETATTR,):
        if old.get(key):
            merged[key] = 1
    for key in (DEPRECATED, SELF_CALLS, SPEC_BUILT):
        merged[key] = {**old.get(key, {}), **new.get(key, {})}
        if not merged[key]:
            merged.pop(key)
    return merged


def index_module(model: dict, path: str, source: bytes, budget: SourceBudget | None = None) -> None:
    """Add one ``.py`` file (path relative to the package root) to the model. A file over the per-file parse caps
    of ``compat.tooling.pysource`` or not valid Python is listed as unparsed (its names accepted); the whole candidate
    passing ``budget`` raises ``SourceTooLargeError``."""
    module, is_package = module_name(path)
    entry = model["modules"].setdefault(module, {IS_PACKAGE: int(is_package), NAMES: {}})
    entry[IS_PACKAGE] = int(entry[IS_PACKAGE] or is_package)
    try:
        tree = parse_source(source, path, budget)
    except (SourceTooLargeError, SourceUnparsableError) as exc:
        if isinstance(exc, SourceTooLargeError) and _within_file_caps(source):
            raise  # the candidate as a whole is over its budget, not this file over its caps
        model["unparsed"].append(path)
        entry[HAS_GETATTR] = 1  # unreadable: accept anything rather than report false removals
        return
    scope = _Scope(model, module, is_package, module)
    try:
        scope.visit_block(tree.body)
    except RecursionError:  # a pathologically nested file: accept its names rather than fail the gate
        model["unparsed"].append(path)
        entry[HAS_GETATTR] = 1
        return
    entry[NAMES] = _compact(scope.names)
    if scope.star:
        entry[STAR] = scope.star
    if scope.all is not None:
        entry[ALL] = scope.all
    if scope.getattr:
        entry[HAS_GETATTR] = 1
    note, names = _module_warns_deprecation(tree)
    if note and names:
        scope.dep.update({name: note for name in names if name not in scope.dep})
    elif note:
        entry["mdep"] = note
    if scope.dep:
        entry[DEPRECATED] = scope.dep
    if scope.param_calls:
        entry[PARAM_CALLS] = scope.param_calls


def _within_file_caps(source: bytes) -> bool:
    return len(source) <= MAX_FILE_BYTES and size_of(source, MAX_FILE_TOKENS) <= MAX_FILE_TOKENS


def member_files(source) -> tuple[str | None, list[str]]:
    """(the package root inside ``source``, its ``megatron/`` modules and extensions relative to that root, sorted):
    what a model is built from, read from the file list alone. A member too deep is refused."""
    root = source.package_root(PACKAGE)
    if root is None:
        return None, []
    # names(), not python_files(): that one doubles the package prefix for source trees
    files = sorted(n[len(root):] for n in source.names()
                   if n.startswith(root + PACKAGE + "/") and n.endswith((".py",) + _EXTENSION_SUFFIXES))
    for rel in files:
        if rel.count("/") > MAX_PATH_DEPTH:
            raise CandidateError(f"{shown(source.label)}: a member {rel.count('/')} directories deep under megatron/ "
                                 f"({shown(rel, 80)}), over the {MAX_PATH_DEPTH} the surface model reads")
    return root, files


# What building a model does, one step per module: a directory on a file's way (importable: namespace packages),
# a ``.py`` file indexed, a compiled extension (an open module).
DIRECTORY, SOURCE_FILE, EXTENSION = "d", "py", "x"


def module_events(files: list[str]) -> list[tuple[str, str, str]]:
    """(module, step, file) in the order ``build_model`` takes them; each step touches only its module, so a
    module's own steps in this order build its entry alone (``lazy_model``)."""
    events = []
    for rel in files:
        parts = PurePosixPath(rel).parts
        events += [(".".join(parts[:depth]), DIRECTORY, rel) for depth in range(1, len(parts))]
        if rel.endswith(".py"):
            events.append((module_name(rel)[0], SOURCE_FILE, rel))
        else:
            events.append((module_name(rel)[0], EXTENSION, rel))
    return events


def apply_event(model: dict, module: str, step: str, rel: str, read, budget: SourceBudget | None) -> None:
    """One step of ``module_events`` on ``model`` (``read(rel)``: the file's bytes)."""
    if step == DIRECTORY:
        model["modules"].setdefault(module, {IS_PACKAGE: 1, NAMES: {}})
    elif step == SOURCE_FILE:
        index_module(model, rel, read(rel), budget)
    else:
        model["modules"].setdefault(module, {IS_PACKAGE: 0, NAMES: {}})[HAS_GETATTR] = 1


def packages_of(modules) -> list[str]:
    """The model's ``packages``: the names under ``megatron.``."""
    return sorted({m.split(".")[1] for m in modules if m.count(".") >= 1})


def build_model(source, *, sha256: str | None = None, version: str | None = None,
                budget: SourceBudget | None = None) -> dict:
    """The model of ``source`` (a ``compat.tooling.archive.Source``): every module under ``megatron/``, its files parsed
    within ``budget`` (default: the caps of ``compat.tooling.pysource``)."""
    model = {"format": MODEL_FORMAT, "sha256": sha256, "version": version, "label": source.label, "kind": source.kind,
             "modules": {}, "classes": {}, "unparsed": []}
    root, files = member_files(source)
    if root is None:
        return model
    budget = budget or SourceBudget()
    for module, step, rel in module_events(files):
        apply_event(model, module, step, rel, lambda name: source.read(root + name), budget)
    if source.kind == "tree":
        _unbuilt_extensions(model, [n[len(root):] for n in source.names() if n.startswith(root + PACKAGE + "/")],
                            lambda rel: source.read(root + rel))
    model["packages"] = packages_of(model["modules"])
    return model


_NATIVE_SOURCES = (".cpp", ".cc", ".cu", ".c")
_LIBNAME = re.compile(rb"^\s*LIBNAME\s*:?=\s*(\w+)", re.M)


def _unbuilt_extensions(model: dict, names: list, read) -> None:
    """A checkout has the C++ sources, not the compiled module (``datasets/helpers.cpp`` builds ``helpers_cpp``):
    the names a build would produce (the Makefile's LIBNAME, ``stem``, ``stem_cpp``) are accepted, unchecked."""
    for rel in names:
        if not rel.endswith(_NATIVE_SOURCES + ("/Makefile",)):
            continue
        directory, _, filename = rel.rpartition("/")
        package = directory.replace("/", ".")
        if package not in model["modules"]:
            continue
        if filename == "Makefile":
            built = [m.decode() for m in _LIBNAME.findall(read(rel)[:65536])]
        else:
            stem = filename.rsplit(".", 1)[0]
            built = [stem, f"{stem}_cpp"]
        for name in built:
            model["modules"].setdefault(f"{package}.{name}", {IS_PACKAGE: 0, NAMES: {}, HAS_GETATTR: 1})
