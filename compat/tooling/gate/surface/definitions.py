# SPDX-License-Identifier: Apache-2.0
"""What one project file defines, read from its tree without scanning it: its functions and their signatures, the
plain methods of its classes, the names a class sets on itself, the project classes it may name, and the small
predicates the project scan asks of names and calls (a megatron module, a decorator, a spec's keywords).
"""
from __future__ import annotations

import ast

from ...ast_tools import dotted, statements, walk
from .model import PARAMS, VARARGS, VARKW, parse_signature, signature
from .project_classes import COMPUTED


def owned(name: str, own: tuple) -> bool:
    """``name`` is in one of the project's own megatron packages (``own``: ``megatron.bridge``)."""
    return any(name == o or name.startswith(o + ".") for o in own)


def is_megatron(name: str | None, own: tuple = ()) -> bool:
    """A module of the megatron library: not one of the project's own megatron packages, which are project modules
    like any other (what they import is followed)."""
    return bool(name) and (name == "megatron" or name.startswith("megatron.")) and not owned(name, own)


def keyword_argument(call: ast.Call, name: str, position: int):
    """The argument of ``call`` for the parameter ``name`` at ``position``, or None."""
    found = next((k.value for k in call.keywords if k.arg == name), None)
    if found is None and len(call.args) > position and not any(isinstance(a, ast.Starred) for a in call.args):
        found = call.args[position]
    return found


def spec_keywords(spec: ast.Call) -> tuple | None:
    """The keywords ``build_module`` adds from a ``ModuleSpec(...)``: ``submodules`` when it has some, and the
    keys of ``params``; None when the params are not a literal dict with string keys."""
    params = keyword_argument(spec, "params", 1)
    submodules = keyword_argument(spec, "submodules", 2)
    added = ("submodules",) if submodules is not None and not is_none(submodules) else ()
    if params is None:
        return added
    if not isinstance(params, ast.Dict) or not all(isinstance(k, ast.Constant) and isinstance(k.value, str)
                                                   for k in params.keys):
        return None
    return added + tuple(k.value for k in params.keys)


def methods(node: ast.ClassDef) -> dict:
    """name -> signature of the plain methods a class body defines."""
    return {i.name: signature(i.args) for i in plain_methods(node)}


def method_lines(node: ast.ClassDef) -> dict:
    """name -> the line of the def of each plain method a class body defines (the last one, as ``_methods``)."""
    return {i.name: i.lineno for i in plain_methods(node)}


def plain_methods(node: ast.ClassDef) -> list:
    return [i for i in node.body if isinstance(i, (ast.FunctionDef, ast.AsyncFunctionDef))
            and not decorated(i, NOT_PLAIN)]


NOT_PLAIN = ("staticmethod", "classmethod", "property")  # decorators after which a method is no plain method


def decorated(node, names: tuple) -> bool:
    """A decorator of ``node`` (a def; a lambda has none) is one of ``names`` (by its last dotted part)."""
    return any((dotted(d) or "").split(".")[-1] in names for d in getattr(node, "decorator_list", ()))


def calls_super(method) -> bool:
    """The method calls ``super().<its own name>(...)``: it extends the base's version rather than replacing it."""
    return any(isinstance(n, ast.Attribute) and n.attr == method.name and isinstance(n.value, ast.Call)
               and dotted(n.value.func) == "super" for n in ast.walk(method))


def module_functions(body: list, outer=None) -> dict:
    """name -> signature of each function a module or function body defines at its top level (``def``, or a
    ``partial``/``lambda`` of one assigned to a name; ``outer`` gives the signature of a name the body does not
    define); "" for a name bound twice."""
    defs: dict[str, str] = {}
    for stmt in body:
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)):
            defs[stmt.name] = "" if stmt.name in defs else signature(stmt.args)
        elif isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name) \
                and stmt.targets[0].id not in defs:
            named = project_callable(stmt.value, lambda name: defs.get(name, "") if name in defs or outer is None
                              else outer(name))
            defs[stmt.targets[0].id] = named[1] if named else ""
        elif isinstance(stmt, (ast.Assign, ast.ClassDef, ast.Import, ast.ImportFrom)):
            for name in top_names(stmt):
                if name in defs:
                    defs[name] = ""
    return defs


def project_callable(node, signature_of) -> tuple | None:
    """(what to call it, its signature) when ``node`` is a function of the project: a name ``signature_of``
    knows, ``lambda ...`` (its own parameters), or ``functools.partial(f, ...)`` of one (what is left unbound)."""
    if isinstance(node, ast.Name):
        sig = signature_of(node.id)
        return (node.id, sig) if sig else None
    if isinstance(node, ast.Lambda):
        return "<lambda>", signature(node.args)
    if isinstance(node, ast.Call) and (dotted(node.func) or "") in ("partial", "functools.partial") and node.args:
        inner = project_callable(node.args[0], signature_of)
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


def top_names(stmt) -> list[str]:
    if isinstance(stmt, ast.ClassDef):
        return [stmt.name]
    if isinstance(stmt, (ast.Import, ast.ImportFrom)):
        return [(a.asname or a.name).split(".")[0] for a in stmt.names]
    return [t.id for t in stmt.targets if isinstance(t, ast.Name)]


def bound_anywhere(tree: ast.Module) -> set[str]:
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


def is_none(node) -> bool:
    return isinstance(node, ast.Constant) and node.value is None


def own_attributes(node: ast.ClassDef) -> frozenset[str]:
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


def absolute(s: ast.ImportFrom, module: str, is_package: bool) -> str:
    """The module a ``from X import`` in ``module`` reads, relative imports resolved."""
    if not s.level:
        return s.module or ""
    base = module.split(".") if is_package else module.split(".")[:-1]
    base = base[: len(base) - (s.level - 1)] if s.level > 1 else base
    return ".".join(base + ([s.module] if s.module else []))


def named_classes(tree: ast.Module, module: str, is_package: bool, own: tuple = ()) -> dict:
    """name -> "module.Name" of what may be a project class at a module's top: its classes and its
    ``from X import Name`` names (whether one is a project class is known once every file is scanned)."""
    found = {a.asname or a.name: f"{absolute(s, module, is_package)}.{a.name}" for s in statements(tree.body)
             if isinstance(s, ast.ImportFrom) and not (s.level == 0 and is_megatron(s.module, own)) for a in s.names}
    found.update({node.name: f"{module}.{node.name}" for node in tree.body if isinstance(node, ast.ClassDef)})
    return found


def only_splats(args: ast.arguments) -> bool:
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


