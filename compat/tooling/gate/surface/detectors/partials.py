# SPDX-License-Identifier: Apache-2.0
"""``functools.partial(megatron_callable, ...)``: a call use with the keywords it binds, and a splat (the rest
comes later)."""
from __future__ import annotations

import ast

from ..kinds import FindingKind as F
from ..rule import Rule

RULE = Rule(
    id="partials",
    sees="functools.partial of a megatron callable",
    records=("call/functools.partial",),
    findings=(F.UNEXPECTED_KEYWORD, F.MISSING_NAME, F.MISSING_MEMBER,),
    example="build = functools.partial(GPTModel, config=config, vp_stage=0)",
    misses="the arguments the partial is called with later (it is a splat: nothing is reported missing)",
)


def claims(scan, e: ast.Call, tail: str) -> bool:
    if not e.args:
        return False
    target = scan.paths(e.args[0])
    if target:
        scan.record(e, target, "call", rule=RULE.id, keywords=tuple(k.arg for k in e.keywords if k.arg), splat=True,
                    via="functools.partial")
    return True
