# SPDX-License-Identifier: Apache-2.0
"""``functools.partial(megatron_callable, ...)``: a call use with the keywords it binds, and a splat (the rest
comes later)."""
from __future__ import annotations

import ast

from ..rule import Rule

RULE = Rule("partials", "functools.partial of a megatron callable", ("call/functools.partial",),
            "build = functools.partial(GPTModel, config=config, vp_stage=0)",
            "the arguments the partial is called with later (it is a splat: nothing is reported missing)")


def claims(scan, e: ast.Call, tail: str) -> bool:
    if not e.args:
        return False
    target = scan.paths(e.args[0])
    if target:
        scan.record(e, target, "call", keywords=tuple(k.arg for k in e.keywords if k.arg), splat=True,
                    via="functools.partial")
    return True
