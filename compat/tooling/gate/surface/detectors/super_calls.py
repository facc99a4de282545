# SPDX-License-Identifier: Apache-2.0
"""``super().__init__(...)`` in a class with a megatron base: a call of that base's ``__init__`` with the call's
keywords; ``super(Base, self).__init__`` calls the class after ``Base`` in the MRO, which only the candidate
knows (``via=SUPER_AFTER``, resolved in check.py)."""
from __future__ import annotations

import ast

from ....ast_tools import dotted
from ..kinds import FindingKind as F
from ..rule import Rule
from ..uses import SUPER_AFTER
from .megatron_calls import record_call

RULE = Rule(
    id="super_calls",
    sees="super().__init__ and super(Base, self).__init__ in a class with a megatron base",
    records=("call/super().__init__", "call/" + SUPER_AFTER),
    findings=(F.UNEXPECTED_KEYWORD, F.MISSING_REQUIRED, F.TOO_MANY_POSITIONAL, F.GIVEN_TWICE,),
    example="class MyModel(GPTModel):\n    def __init__(self, config):\n        super().__init__(config, vp_stage=0)",
    misses="other methods' super() calls (their overrides are method_overrides'); a base reached through a "
           "project class in between",
)


def visit_call(scan, e: ast.Call) -> None:
    func = e.func
    if isinstance(func, ast.Attribute) and func.attr == "__init__" and isinstance(func.value, ast.Call) \
            and dotted(func.value.func) == "super" and scan.class_stack:
        _super_init(scan, e, func.value.args)


def _super_init(scan, e: ast.Call, super_args: list) -> None:
    context = scan.class_stack[-1]
    first = dotted(super_args[0]) if super_args else None
    if first is None or first == context.name:
        if context.base:
            record_call(scan, e, context.base, via="super().__init__", rule=RULE.id)
        return
    named = scan.paths(super_args[0])
    if named:
        record_call(scan, e, named, via=SUPER_AFTER, rule=RULE.id)
