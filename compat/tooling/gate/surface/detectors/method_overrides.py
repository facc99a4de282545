# SPDX-License-Identifier: Apache-2.0
"""Methods of a project class with a megatron base: each plain method is an ``override`` use (its signature, and
every method the class defines: they replace the base's callers), checked in overrides.py against how megatron's
own methods call it."""
from __future__ import annotations

import ast

from ..definitions import NOT_PLAIN, calls_super, decorated
from ..kinds import FindingKind as F
from ..model import signature
from ..rule import Rule
from ..uses import Use

RULE = Rule(
    id="method_overrides",
    sees="plain methods of a class whose base is a megatron class",
    records=("override",),
    findings=(F.OVERRIDE,),
    example="class MyLayer(TransformerLayer):\n    def forward(self, hidden_states):\n        ...",
    misses="static and class methods, properties; a megatron base reached through a project class (project_"
           "classes.py types those at the call sites instead)",
)


def visit_class(scan, node: ast.ClassDef, context) -> None:
    """Each method of a class with a megatron base, as an ``override`` use (checked in overrides.py)."""
    bases = context.base
    if not bases:
        return
    defined = tuple(sorted(i.name for i in node.body if isinstance(i, (ast.FunctionDef, ast.AsyncFunctionDef))
                           and not _extends(scan, i)))
    for item in node.body:
        if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)) and item.args.args and \
                not decorated(item, NOT_PLAIN):
            scan.uses.append(Use(scan.path, item.lineno, f"{bases[0]}.{item.name}", "override",
                                 alternatives=tuple(f"{b}.{item.name}" for b in bases[1:]),
                                 contract=(signature(item.args), defined), rule=RULE.id))


def _extends(scan, method) -> bool:
    """definitions.calls_super, for a method whose lines (decorators included) spell ``super`` only."""
    first = min([method.lineno] + [d.lineno for d in method.decorator_list])
    supers = scan.hints.supers
    if supers is not None and not supers.within(first, method.end_lineno or method.lineno):
        return False
    return calls_super(method)
