# SPDX-License-Identifier: Apache-2.0
"""Attribute chains off a name bound to megatron (``mpu.get_x``, ``tp.gather``), and free names that a megatron
star import provides; an assignment to one (``mpu.x = ...``) is a monkeypatch: the name is the project's from
there on (``ProjectScan.sets``)."""
from __future__ import annotations

import ast

from ..kinds import FindingKind as F
from ..rule import Rule

RULE = Rule(
    id="attributes",
    sees="attribute chains off names bound to megatron, names from megatron star imports",
    records=("attribute",),
    findings=(F.MISSING_NAME, F.MISSING_MEMBER, F.DEPRECATED, F.NOT_SHIPPED,),
    example="from megatron.core import parallel_state as mpu\nmpu.get_tensor_model_parallel_rank()",
    misses="names bound through a computed expression (``m = modules[i]``), or through ``getattr`` with a variable",
)


def visit_attribute(scan, e) -> bool:
    """Records the use of ``e`` when it names megatron (True: nothing below it is walked)."""
    paths = scan.paths(e)
    if not paths:
        return False
    if isinstance(e.ctx, (ast.Store, ast.Del)):
        if not scan.forwarding:  # a forwarding wrapper still calls the original: keep checking it
            scan.sets.update(paths)
        parent = scan.paths(e.value)
        if parent and isinstance(e.value, ast.Attribute):
            scan.record(e, parent, "attribute", rule=RULE.id)
    else:
        scan.record(e, paths, "attribute", rule=RULE.id)
    return True


def visit_name(scan, e) -> None:
    star = scan.from_star(e.id) if type(e.ctx) is ast.Load else None
    if star:
        scan.record(e, star, "attribute", rule=RULE.id)
