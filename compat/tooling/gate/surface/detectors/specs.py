# SPDX-License-Identifier: Apache-2.0
"""Project classes put into a megatron layer spec: ``ModuleSpec(module=MegatronClass, submodules=Subs(key=
ModuleSpec(module=ProjectClass, ...)))``, or an edit of a spec of unknown origin (``spec.submodules.key.module =
ProjectClass``); the megatron class builds ``key`` with ``build_module`` and calls it (one ``spec`` use per
project class, checked in overrides.py)."""
from __future__ import annotations

import ast

from ..definitions import keyword_argument, spec_keywords
from ..kinds import FindingKind as F
from ..rule import Rule
from ..uses import Use

RULE = Rule(
    id="specs",
    sees="ModuleSpec(...) with project classes as submodules, and assignments into spec.submodules",
    records=("spec",),
    findings=(F.OVERRIDE,),
    example="ModuleSpec(module=TransformerLayer, submodules=TransformerLayerSubmodules(\n"
            "    self_attention=ModuleSpec(module=MyAttention, params={\"attn_mask_type\": 1})))",
    misses="specs built by project functions from parameters; a submodule that is not a project class",
)


def visit_call(scan, e: ast.Call, target) -> None:
    """``ModuleSpec(module=MegatronClass, submodules=Subs(key=...))``: a ``spec`` use per project class."""
    if not (target and target[0].endswith(".ModuleSpec")):
        return
    outer = keyword_argument(e, "module", 0)
    classes = scan.paths(outer) if outer is not None else None
    submodules = keyword_argument(e, "submodules", 2)
    if not classes or not isinstance(submodules, ast.Call):
        return
    for k in submodules.keywords:
        inner, added = k.value, ()
        if isinstance(k.value, ast.Call) and (scan.paths(k.value.func) or ("",))[0].endswith(".ModuleSpec"):
            inner, added = keyword_argument(k.value, "module", 0), spec_keywords(k.value)
        origin = scan.project_class(inner)
        if k.arg and origin:
            scan.uses.append(Use(scan.path, k.value.lineno, classes[0], "spec", tuple(scan.guards),
                                 classes[1:], contract=(k.arg, origin, added), rule=RULE.id))


def visit_assign(scan, s: ast.Assign) -> None:
    """``spec.submodules.key.module = ProjectClass`` or ``spec.submodules.key = ModuleSpec(module=ProjectClass)``
    on a spec of unknown origin: a ``spec`` use for whichever megatron class builds ``key`` (name "")."""
    value, added = s.value, ()
    if isinstance(value, ast.Call) and (scan.paths(value.func) or ("",))[0].endswith(".ModuleSpec"):
        value, added = keyword_argument(value, "module", 0), spec_keywords(value)
    origin = scan.project_class(value)
    for t in s.targets if origin else ():
        if isinstance(t, ast.Attribute) and t.attr == "module" and isinstance(t.value, ast.Attribute):
            t, added = t.value, None  # the spec's params and submodules stay as they were: unknown here
        if isinstance(t, ast.Attribute) and isinstance(t.value, ast.Attribute) and t.value.attr == "submodules":
            scan.uses.append(Use(scan.path, s.lineno, "", "spec", tuple(scan.guards), contract=(t.attr, origin, added),
                                 rule=RULE.id))
