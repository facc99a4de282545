# SPDX-License-Identifier: Apache-2.0
"""``importlib.import_module("megatron.x")`` and ``__import__("megatron.x")`` with a constant name: a ``module``
use, as an import statement would be."""
from __future__ import annotations

import ast

from ..definitions import is_megatron
from ..kinds import FindingKind as F
from ..rule import Rule

RULE = Rule(
    id="dynamic_imports",
    sees="import_module/__import__ of a constant megatron module name",
    records=("module/importlib.import_module", "module/__import__"),
    findings=(F.MISSING_MODULE, F.DEPRECATED, F.NOT_SHIPPED,),
    example='importlib.import_module("megatron.core.transformer.moe")',
    misses="a computed module name (``import_module(f\"megatron.core.{x}\")``)",
)


def claims(scan, e: ast.Call, tail: str) -> bool:
    args = e.args
    if not (args and isinstance(args[0], ast.Constant) and is_megatron(str(args[0].value), scan.own)):
        return False
    scan.record(e, (str(args[0].value),), "module", rule=RULE.id,
                via="importlib.import_module" if tail == "import_module" else "__import__")
    return True
