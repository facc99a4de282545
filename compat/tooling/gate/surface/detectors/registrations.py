# SPDX-License-Identifier: Apache-2.0
"""A project function registered under a megatron dotted path written as a string: ``register("megatron.core.x.
Y.forward", my_forward)``, ``mock.patch("megatron...", fake)``; megatron then calls the project's function in the
original's place (a ``replacement`` use of that name)."""
from __future__ import annotations

import ast
import re

from ..definitions import is_megatron
from ..kinds import FindingKind as F
from ..rule import Rule
from .replacements import replaced

RULE = Rule(
    id="registrations",
    sees="a call whose first argument is a megatron dotted path as a string and whose second "
         "is a project function",
    records=("replacement",),
    findings=(F.OVERRIDE,),
    example='patch_registry.register("megatron.core.models.gpt.GPTModel.forward", my_forward)',
    misses="whether the registrar really installs it on the path a use runs (the name stays megatron's); a path "
           "built at run time",
)
_DOTTED_PATH = re.compile(r"[A-Za-z_]\w*(\.[A-Za-z_]\w*)+")


def claims(scan, e: ast.Call, tail: str) -> bool:
    args = e.args
    if not (len(args) >= 2 and isinstance(args[0], ast.Constant) and isinstance(args[0].value, str)
            and _DOTTED_PATH.fullmatch(args[0].value) and is_megatron(args[0].value, scan.own)):
        return False
    replaced(scan, e, (args[0].value,), args[1], rule=RULE.id)
    return True
