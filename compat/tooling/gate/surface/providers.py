# SPDX-License-Identifier: Apache-2.0
"""Project functions handed to megatron (model providers) that are not a name bound to a def of the calling file.

- A call of a project function (of this file or imported from a project module) whose every ``return`` gives a
  function (an inner def, a lambda, a partial, a def of its module, ``obj.method`` with ``obj = ProjectClass(...)``
  obj's one binding in it): each function it returns is a provider.
- A project wrapper whose one ``return`` gives an inner def that takes only ``*args``/``**kwargs`` and calls one
  of the wrapper's parameters: the argument in that parameter's slot is the provider (the closure forwards to it).
- ``self.name`` in a method, or ``obj.name`` where ``obj = ProjectClass(...)`` is the one binding of ``obj`` in the
  calling function: the method ``name`` of that project class (or a project base), ``self`` dropped.

A project function that replaces a megatron callable (``Attention.forward = my_forward``, or a dotted string
handed to a registrar with it: ``register("megatron.core....forward", my_forward)``) is a ``DEF`` entry: the def's
own signature, or, when the def returns functions (a decorator: ``forward_wrapper(fn)``), those it returns.

The scanner records what it cannot settle in its own file as a deferred entry (``FACTORY``/``METHOD``/``DEF``);
``settle`` resolves them once every file has been scanned. A use's ``callables`` then hold, per function,
``(slot, name, signature, where)``: where is ``(path, line)`` of the function's def, or None (at the call).
"""
from __future__ import annotations

import ast
from dataclasses import replace

from ...ast_tools import dotted, statements
from .instances import bound_names, bound_once
from .model import signature

FACTORY, METHOD, DEF = "factory", "method", "def"
RETURNS, FORWARDS, DEFINED = "returns", "forwards", "defined"
MAX_DEPTH = 4  # factories of factories followed


def returned_values(node) -> list | None:
    """The values of the function's own ``return`` statements (not those of nested defs); None when one of them
    returns nothing."""
    values = [s.value for s in statements(node.body) if isinstance(s, ast.Return)]
    return None if any(v is None for v in values) else values


def factory_of(node, module_defs: dict, callable_of, classes: dict | None = None) -> tuple | None:
    """``(RETURNS, ((name, signature, line), ...))`` when every return of the function ``node`` gives a function,
    ``(FORWARDS, index, parameter)`` for a wrapper whose closure forwards ``*args``/``**kwargs`` to a parameter;
    None otherwise. ``module_defs``: name -> signature of the module's functions; ``callable_of(expr,
    signature_of)`` is the project scan's reading of a function expression (a name, a lambda, a partial); ``classes``:
    name -> "module.Class" of the project classes the module names, for ``return obj.method`` where
    ``obj = Class(...)`` is obj's one binding in the function (the signature is then ``(METHOD, class, method)``,
    read once every file is scanned)."""
    values = returned_values(node)
    if not values:
        return None
    built = _constructed_once(node, classes) if classes else {}
    inner: dict = {}
    for s in statements(node.body):
        if isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef)):
            inner[s.name] = None if s.name in inner else s  # a name defined twice: which one is returned is unknown
    params = [a.arg for a in node.args.posonlyargs + node.args.args]
    if len(values) == 1 and isinstance(values[0], ast.Name) and inner.get(values[0].id) is not None:
        closure = inner[values[0].id]
        forwarded = _forwarded_parameter(closure, params + [a.arg for a in node.args.kwonlyargs])
        if forwarded is not None:
            index = params.index(forwarded) if forwarded in params else -1
            return FORWARDS, index, forwarded
    found = []
    for value in values:
        if isinstance(value, ast.Attribute) and isinstance(value.value, ast.Name) and value.value.id in built:
            found.append((dotted(value), (METHOD, built[value.value.id], value.attr), value.lineno))
            continue
        if isinstance(value, ast.Name) and value.id in inner:
            closure = inner[value.id]
            if closure is None:
                return None
            found.append((closure.name, signature(closure.args), closure.lineno))
            continue
        named = callable_of(value, lambda name: module_defs.get(name, "") if name not in inner else
                            signature(inner[name].args) if inner[name] is not None else "")
        if named is None or not named[1]:
            return None
        found.append((named[0], named[1], value.lineno))
    return RETURNS, tuple(found)


def _constructed_once(node, classes: dict) -> dict:
    """name -> "module.Class" for each name the function binds once, by ``name = Class(...)`` of a project class
    the function does not rebind."""
    counts = bound_names(node.body, node.args, True)
    return {name: classes[value.func.id] for name, value in bound_once(node.body, counts).items()
            if isinstance(value, ast.Call) and isinstance(value.func, ast.Name) and classes.get(value.func.id)
            and not counts[value.func.id]}


def _forwarded_parameter(closure, params: list) -> str | None:
    """The outer parameter a closure that takes only ``*args``/``**kwargs`` calls with them, if one."""
    args = closure.args
    if args.posonlyargs or args.args or args.kwonlyargs or not (args.vararg or args.kwarg):
        return None
    for node in ast.walk(closure):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in params and (
                any(isinstance(a, ast.Starred) for a in node.args) or any(k.arg is None for k in node.keywords)):
            return node.func.id
    return None


def call_slots(call: ast.Call) -> list:
    """(slot, argument) of a call: "0", "1", ... positional, "=kw" a keyword (splats left out)."""
    return [(str(i), a) for i, a in enumerate(call.args) if not isinstance(a, ast.Starred)] + \
        [("=" + k.arg, k.value) for k in call.keywords if k.arg]


def without_self(sig: str) -> str:
    """A method's compact signature (model.py) without its first parameter."""
    flags, _, params = sig.partition("|")
    return f"{flags}|{','.join(params.split(',')[1:])}" if params else sig


def settle(uses: list, factories: dict, method_of) -> list:
    """The uses with their deferred callables resolved (``factories``: "module.function" -> factory_of's answer
    and the file it is in; ``method_of(class, name)``: a project class's method signature, or None)."""
    out = []
    for use in uses:
        if any(entry[3] and entry[3][0] in (FACTORY, METHOD, DEF) for entry in use.callables):
            resolved = tuple(x for entry in use.callables for x in _resolve(entry, factories, method_of, 0))
            use = replace(use, callables=resolved)
        out.append(use)
    return out


def _resolve(entry: tuple, factories: dict, method_of, depth: int) -> list:
    slot, name, sig, deferred = entry
    if not deferred or deferred[0] not in (FACTORY, METHOD, DEF):
        return [entry]
    if deferred[0] == METHOD:
        found = method_of(deferred[1], deferred[2])
        return [(slot, name, without_self(found), None)] if found else []
    if deferred[0] == DEF:  # the function itself, unless it is a decorator: then what it returns
        known = factories.get(deferred[1])
        if known is not None and known[0][0] == DEFINED:
            return [(slot, name, known[0][1], (known[1], known[0][2]))]
        deferred = (FACTORY, deferred[1], ())
    _kind, target, arguments = deferred
    known = factories.get(target)
    if known is None or depth >= MAX_DEPTH or known[0][0] == DEFINED:
        return []
    answer, path = known
    if answer[0] == RETURNS:
        out = []
        for returned, returned_sig, line in answer[1]:
            if isinstance(returned_sig, tuple):  # a bound method of a project class: its own signature, or nothing
                returned_sig = method_of(returned_sig[1], returned_sig[2])
                returned_sig = without_self(returned_sig) if returned_sig else None
            if returned_sig:
                out.append((slot, returned, returned_sig, (path, line)))
        return out
    _forwards, index, parameter = answer
    for arg_slot, arg in arguments:
        if arg_slot in (str(index), "=" + parameter):
            return _resolve((slot, *arg), factories, method_of, depth + 1)
    return []


def project_function(func, module: str, defs: dict, origins: dict) -> str | None:
    """"module.function" of a call's callee when it names a top-level def of this file or a name imported from
    a project module (whether it is a factory is known once every file is scanned)."""
    name = dotted(func)
    if name is None or "." in name:
        return None
    if defs.get(name):
        return f"{module}.{name}"
    return origins.get(name)


def wanted(uses: list) -> set:
    """Every "module.function" a deferred callable of ``uses`` asks about (the factories' own arguments too)."""
    out: set = set()
    todo = [entry for use in uses for entry in use.callables]
    while todo:
        _slot, _name, _sig, deferred = todo.pop()
        if deferred and deferred[0] == FACTORY:
            out.add(deferred[1])
            todo += [(slot, *arg) for slot, arg in deferred[2]]
        elif deferred and deferred[0] == DEF:
            out.add(deferred[1])
    return out


def wanted_defs(uses: list) -> set:
    """Every "module.function" a ``DEF`` entry of ``uses`` names (its def is read once every file is scanned)."""
    return {entry[3][1] for use in uses for entry in use.callables if entry[3] and entry[3][0] == DEF}


def defined(body: list, names: set) -> dict:
    """name -> ``(DEFINED, signature, line)`` for each function of ``names`` a module body defines once at its top
    level and that returns no inner def (a def that does is a decorator whose closure factory_of could not read:
    what it returns is unknown, so nothing is said of it)."""
    defs: dict = {}
    for node in body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name in names:
            defs[node.name] = None if node.name in defs else node
    out = {}
    for name, node in defs.items():
        if node is None:
            continue
        inner = {s.name for s in statements(node.body) if isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef))}
        if any(isinstance(v, ast.Name) and v.id in inner for v in returned_values(node) or ()):
            continue
        out[name] = (DEFINED, signature(node.args), node.lineno)
    return out


def file_factories(body: list, module_defs: dict, callable_of, classes: dict | None = None) -> dict:
    """name -> factory_of's answer for each top-level function of a module body that returns functions;
    ``module_defs``: name -> signature of the module's functions, "" for a name bound twice (which is left out);
    ``classes``: see factory_of."""
    return {node.name: found for node in body if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
            and module_defs.get(node.name) for found in (factory_of(node, module_defs, callable_of, classes),)
            if found}
