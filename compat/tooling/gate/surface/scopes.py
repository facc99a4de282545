# SPDX-License-Identifier: Apache-2.0
"""The project scan's frames: one ``Scope`` per scope it is in, one ``FunctionContext`` per function body and one
``ClassContext`` per class body around the node it reads (what used to be parallel stacks, one value each).

A ``Scope`` holds the names it binds (megatron paths, or None where a local shadows them) and, for a function or
the module, what is read of its body on demand: its names holding megatron instances, its dicts with known keys,
the functions it defines. A ``Frame`` is what forwarding.py needs to know of a top-level function or method.
"""
from __future__ import annotations

import ast
from dataclasses import dataclass, field

from .model import signature


@dataclass(eq=False)
class Scope:
    names: dict  # name -> megatron paths, or None where a local shadows them
    is_class: bool = False
    bound: set = field(default_factory=set)  # local names bound to megatron, visible ones included
    instances: dict | None = None  # its names that hold a megatron instance (instances.scope_instances)
    dicts: object = None  # (body, args), then its dicts with known keys (splats.py), read on a ``**name`` call
    local_defs: dict | None = None  # a function's scope: the functions its body defines


@dataclass(frozen=True)
class Frame:
    key: str | None = None  # module.function or module.Class.method (None: a nested function, a lambda)
    sig: str = ""
    carriers: frozenset = frozenset()  # its ** parameter and the dicts ``d.update(kwargs)`` fills from it
    self_name: str | None = None
    owner: str | None = None  # module.Class of a method


@dataclass(eq=False)
class FunctionContext:
    frame: Frame
    self_names: tuple | None = None  # (the name of self, (megatron base, own attributes)) in a method of a class
    # whose bases are all megatron's
    held_self: tuple | None = None  # (the name of self, its class's held attributes) in a plain method
    owner: tuple | None = None  # (the name of self, "module.Class") in a plain method of a top-level class
    once: object = None  # (body, args), then name -> the value of its one binding (instances.bound_once)
    probed: set = field(default_factory=set)  # the megatron callables ``inspect.signature`` reads in it


@dataclass(frozen=True)
class ClassContext:
    name: str
    base: tuple | None  # the paths of its first megatron base
    instance: tuple | None  # (its megatron base, the attributes it sets) when every base is megatron's
    held: dict  # the attributes its __init__ sets to a megatron instance


def function_frame(node, body: list, plain: bool, module: str, class_name: str | None) -> Frame:
    """A module-level function, or a plain method of the top-level class ``class_name``: its key, ``**``
    parameter, the dicts its body fills from that parameter, and (a method) the name of ``self`` and its class's
    key."""
    owner = f"{module}.{class_name}" if class_name else None
    kwarg = node.args.kwarg.arg if node.args.kwarg else None
    carriers = {kwarg} | {s.value.func.value.id for s in body if isinstance(s, ast.Expr) and kwarg
                          and isinstance(s.value, ast.Call) and isinstance(s.value.func, ast.Attribute)
                          and s.value.func.attr == "update" and isinstance(s.value.func.value, ast.Name)
                          and len(s.value.args) == 1 and isinstance(s.value.args[0], ast.Name)
                          and s.value.args[0].id == kwarg} if kwarg else set()
    self_name = node.args.args[0].arg if owner and plain and node.args.args else None
    return Frame(f"{owner or module}.{node.name}", signature(node.args), frozenset(carriers), self_name, owner)
