# SPDX-License-Identifier: Apache-2.0
"""Keyword calls of the project's own functions and ``self`` methods (``via=PROJECT_CALL``): forwarding.py turns
them into calls of the megatron callee where that function forwards its ``**kwargs`` to one."""
from __future__ import annotations

import ast

from ..forwarding import PROJECT_CALL
from ..kinds import FindingKind as F
from ..rule import Rule
from ..scopes import Frame
from ..uses import Use

RULE = Rule(
    id="project_calls",
    sees="calls with keywords of a module-level project function or of self.method",
    records=("call/" + PROJECT_CALL + " (resolved across files)",),
    findings=(F.UNEXPECTED_KEYWORD, F.MISSING_REQUIRED,),
    example="def build(**kwargs):\n    return GPTModel(**kwargs)\n\nbuild(config=config, vp_stage=0)",
    misses="calls of nested functions and lambdas; a forwarder that changes the keywords before it passes them on",
)


def visit_call(scan, e: ast.Call) -> None:
    callee = project_callee(scan, e.func) if any(k.arg for k in e.keywords) else None
    if callee:
        named = [k for k in e.keywords if k.arg]
        scan.uses.append(Use(scan.path, e.lineno, callee, "call", tuple(scan.guards), keywords=tuple(
            k.arg for k in named), keyword_lines=tuple(k.lineno for k in named), via=PROJECT_CALL,
            rule=RULE.id))


def project_callee(scan, func) -> str | None:
    """The key of the project function (or ``self.method``) a call names, for forwarding.py."""
    frame = scan.functions[-1].frame if scan.functions else Frame()
    if isinstance(func, ast.Name) and scan.at_module(func.id) and not scan.lookup(func.id):
        return f"{scan.module}.{func.id}" if scan.file.defs.get(func.id) else scan.file.origins.get(func.id)
    if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) and frame.self_name \
            and func.value.id == frame.self_name and scan.lookup(frame.self_name) is None:
        return f"{frame.owner}.{func.attr}"
    return None
