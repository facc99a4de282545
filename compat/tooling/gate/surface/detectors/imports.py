# SPDX-License-Identifier: Apache-2.0
"""Imports of megatron: ``import megatron.core.x`` (a ``module`` use) and ``from megatron.core.x import Y`` (the
module, and an ``import`` use of each name)."""
from __future__ import annotations

import ast

from ..definitions import is_megatron
from ..kinds import FindingKind as F
from ..rule import Rule

RULE = Rule(
    id="imports",
    sees="import statements of megatron modules and names",
    records=("module", "import"),
    findings=(F.MISSING_MODULE, F.MISSING_NAME, F.DEPRECATED, F.NOT_SHIPPED,),
    example="from megatron.core import parallel_state\nimport megatron.core.tensor_parallel as tp",
    misses="a project's own megatron packages (megatron.bridge: a project module like any other)",
)


def visit_import(scan, s) -> None:
    if isinstance(s, ast.Import):
        for a in s.names:
            if is_megatron(a.name, scan.own):
                scan.record(s, (a.name,), "module", rule=RULE.id)
    elif s.level == 0 and is_megatron(s.module, scan.own):
        scan.record(s, (s.module,), "module", rule=RULE.id)
        for a in s.names:
            if a.name != "*":
                scan.record(s, (f"{s.module}.{a.name}",), "import", rule=RULE.id)
