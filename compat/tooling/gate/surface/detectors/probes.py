# SPDX-License-Identifier: Apache-2.0
"""``getattr``/``hasattr`` probes of a megatron object's attribute: a ``probe`` use, and (``hasattr``, or
``getattr`` with a default) a guard on what the call's own arguments use."""
from __future__ import annotations

import ast

from .. import guards as g
from ..kinds import FindingKind as F
from ..rule import Rule

RULE = Rule(
    id="probes",
    sees="getattr/hasattr with a constant attribute name on a megatron object",
    records=("probe",),
    findings=(F.MISSING_NAME, F.MISSING_MEMBER,),
    example='if hasattr(mpu, "get_x"):\n    mpu.get_x()',
    misses="a computed attribute name (``getattr(mpu, name)``); the guard a probe gives an ``if`` is "
           "branch_guards.py's",
)


def claims(scan, e: ast.Call, tail: str) -> bool:
    args = e.args
    if not (len(args) >= 2 and isinstance(args[1], ast.Constant) and isinstance(args[1].value, str)):
        return False
    owner = scan.paths(args[0])
    if owner:
        default = tail == "getattr" and (len(args) > 2 or any(k.arg == "default" for k in e.keywords))
        probed = tuple(f"{p}.{args[1].value}" for p in owner)
        if tail == "hasattr" or default:
            scan.push(g.PROBE, e.lineno, {args[1].value})
        scan.record(e, probed, "probe", rule=RULE.id, via=tail + (" with default" if default else ""))
        if tail == "hasattr" or default:
            scan.guards.pop()
    return True
