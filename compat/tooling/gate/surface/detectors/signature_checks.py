# SPDX-License-Identifier: Apache-2.0
"""``inspect.signature(megatron_callable)`` in a function: the project looks at the parameters before it calls, so
the calls of that callable in the same function carry a ``SIGNATURE`` guard (guards.py)."""
from __future__ import annotations

import ast

from ..kinds import GuardKind
from ..rule import Rule

RULE = Rule(
    id="signature_checks",
    sees="inspect.signature of a megatron callable (or its __init__)",
    records=("guard: " + GuardKind.SIGNATURE,),
    findings=(),
    example="if 'vp_stage' in inspect.signature(GPTModel).parameters:\n    GPTModel(config, vp_stage=0)",
    misses="a signature read in another function than the call; what the project does with the parameters",
)


def claims(scan, e: ast.Call, tail: str) -> bool:
    if not e.args:
        return False
    probed = scan.paths(e.args[0])
    for p in probed or ():
        scan.probed.add(p[: -len(".__init__")] if p.endswith(".__init__") else p)
    return True
