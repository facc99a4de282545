# SPDX-License-Identifier: Apache-2.0
"""Members of megatron instances the project holds: ``w.attr`` / ``w.method(...)`` where ``w`` holds an instance
of a megatron class (instances.py), ``self.x.attr`` where ``__init__`` kept one on ``self``, and ``self.X`` read
in a method of a class whose bases are all megatron's, where the class sets ``X`` nowhere (what the megatron base
sets on ``self``: ``via=SELF_ATTRIBUTE``)."""
from __future__ import annotations

import ast

from ..instances import held_path
from ..kinds import FindingKind as F
from ..project_classes import COMPUTED
from ..rule import Rule
from ..uses import SELF_ATTRIBUTE

RULE = Rule(
    id="instance_members",
    sees="attributes and calls off names and self attributes holding megatron instances, "
         "and self attributes only a megatron base sets",
    records=("attribute", "attribute/" + SELF_ATTRIBUTE, "call"),
    findings=(F.MISSING_MEMBER, F.UNEXPECTED_KEYWORD, F.MISSING_REQUIRED, F.TOO_MANY_POSITIONAL,),
    example="model = GPTModel(config)\nmodel.set_input_tensor(x)",
    misses="an instance whose name is bound more than once; a class with a project mixin among its bases (it may "
           "set anything on self)",
)


def visit_attribute(scan, e) -> bool:
    """Records the use of a member of a held instance (True: nothing below it is walked), or of a self attribute
    the megatron base sets (then the chain is still walked)."""
    held = instance_member(scan, e)
    if held:
        if isinstance(e.ctx, ast.Load):
            scan.record(e, held[0], "attribute", rule=RULE.id, via=held[1])
        else:
            scan.sets.update(held[0])  # the project sets it on its instance: its own from here on
        return True
    found = inherited(scan, e)
    if found:
        scan.record(e, (found,), "attribute", rule=RULE.id, via=SELF_ATTRIBUTE)
    return False


def instance_member(scan, e) -> tuple | None:
    """``w.attr`` or ``self.x.attr`` off a held megatron instance: (``Class.attr`` for each class it may be, the
    ``via`` of its use)."""
    context = scan.functions[-1].held_self if scan.functions else None
    return held_path(e, scan.instance_of, *(context or (None, {})))


def inherited(scan, e: ast.Attribute) -> str | None:
    """``self.X`` read in a method of a class whose bases are all megatron's, X set nowhere in the class: what
    the megatron base sets on ``self`` (``megatron...SelfAttention.model_comm_pgs``)."""
    context = scan.functions[-1].self_names if scan.functions else None
    if context is None or not isinstance(e.ctx, ast.Load) or not isinstance(e.value, ast.Name) \
            or e.value.id != context[0] or scan.lookup(context[0]) is not None:
        return None
    base, own = context[1]
    return None if e.attr in own or COMPUTED in own or e.attr.startswith("__") else f"{base}.{e.attr}"
