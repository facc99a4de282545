# SPDX-License-Identifier: Apache-2.0
"""Class attributes bound to classes: a class body's ``NAME = X`` where X is a megatron name or a project class
(project_classes.CLASS_VALUES, read where ``self.NAME(...)`` is called in a subclass), and ``self.NAME(**kwargs)``
directly in a forwarder, which forwards to what ``NAME`` is in the class of the ``self.method(...)`` call
(forwarding.SELF_VALUE, resolved once every file is read)."""
from __future__ import annotations

import ast

from ..forwarding import SELF_VALUE, add_forwarder
from ..kinds import FindingKind as F
from ..rule import Rule
from ..scopes import Frame

RULE = Rule(
    id="class_values",
    sees="class attributes bound to megatron or project classes, and self.NAME(**kwargs) in a "
         "method that forwards its **kwargs",
    records=("call (resolved across files)",),
    findings=(F.UNEXPECTED_KEYWORD, F.MISSING_REQUIRED,),
    example="class Provider:\n    ConfigClass = TransformerConfig\n    def make(self, **kwargs):\n"
            "        return self.ConfigClass(**kwargs)",
    misses="a class attribute bound in a branch of the class body or set on an object elsewhere in the class",
)


def class_values(scan, node: ast.ClassDef) -> dict:
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
            megatron = scan.paths(s.value) if named else None
            origin = scan.project_class(s.value) if named and not megatron else None
            values[target.id] = ("megatron", megatron) if megatron else ("project", origin) if origin else None
    if not any(values.values()):
        return {}
    for sub in ast.walk(node):  # bound anywhere else in the class: a branch of its body, ``obj.NAME = ...``
        name = sub.attr if isinstance(sub, ast.Attribute) else (
            sub.id if isinstance(sub, ast.Name) and id(sub) not in direct else None)
        if name in values and isinstance(sub.ctx, ast.Store):
            values[name] = None
    return {k: v for k, v in values.items() if v is not None}


def visit_call(scan, e: ast.Call) -> None:
    """``self.NAME(**kwargs)`` directly in a forwarder, unguarded: a forwarder to ``SELF_VALUE + NAME``."""
    frame = scan.functions[-1].frame if len(scan.functions) == 1 else Frame()
    func = e.func
    if frame.key and frame.self_name and not scan.guards and isinstance(func, ast.Attribute) \
            and isinstance(func.value, ast.Name) and func.value.id == frame.self_name \
            and scan.lookup(frame.self_name) is None and any(
                k.arg is None and isinstance(k.value, ast.Name) and k.value.id in frame.carriers
                for k in e.keywords):
        add_forwarder(scan.forwarded, frame.key, (SELF_VALUE + func.attr,), frame.sig)
