# SPDX-License-Identifier: Apache-2.0
"""Calls of megatron callables and classes (a name bound to megatron, or a method of a held megatron instance):
a ``call`` use with its keywords (and the literal keys of a ``**d`` this scope builds), its positional count, its
splats and the project functions it is handed (model providers: providers.py). A top-level function that passes
its own ``**kwargs`` on unguarded is a forwarder of that callee (forwarding.py)."""
from __future__ import annotations

import ast

from ....ast_tools import dotted
from ..definitions import project_callable
from ..forwarding import add_forwarder
from ..kinds import FindingKind as F
from ..providers import FACTORY, MAX_DEPTH, METHOD, call_slots, project_function
from ..rule import Rule
from ..scopes import Frame
from .instance_members import RULE as _INSTANCE_MEMBERS_RULE
from .instance_members import instance_member

RULE = Rule(
    id="megatron_calls",
    sees="calls of megatron callables, classes and members of held megatron instances",
    records=("call",),
    findings=(F.UNEXPECTED_KEYWORD, F.MISSING_REQUIRED, F.TOO_MANY_POSITIONAL, F.GIVEN_TWICE, F.MISSING_NAME,
              F.MISSING_MEMBER, F.DEPRECATED, F.OVERRIDE,),
    example="from megatron.core.models.gpt import GPTModel\nGPTModel(config=config, vp_stage=0)",
    misses="keywords a ``**d`` carries that this scope does not build with literal keys, nor writes as a literal "
           "dict in the call (a splat: nothing is reported missing); callables the project reaches through computed "
           "expressions",
)


def visit_call(scan, e: ast.Call, target) -> bool:
    """Records the call when its callee is megatron's (True), else False."""
    held = None if target else instance_member(scan, e.func)
    if not (target or held):
        return False
    if target:
        record_call(scan, e, target)
    else:
        record_call(scan, e, held[0], held[1], rule=INSTANCE_MEMBERS)
    return True


INSTANCE_MEMBERS = _INSTANCE_MEMBERS_RULE.id


def record_call(scan, e: ast.Call, target: tuple, via: str = "", *, rule: str = RULE.id) -> None:
    starred = any(isinstance(a, ast.Starred) for a in e.args)
    frame = scan.functions[-1].frame if len(scan.functions) == 1 else Frame()
    if frame.key and not via and not scan.guards and any(
            k.arg is None and isinstance(k.value, ast.Name) and k.value.id in frame.carriers for k in e.keywords):
        add_forwarder(scan.forwarded, frame.key, target, frame.sig)
    named = [(k.arg, getattr(k, "lineno", e.lineno)) for k in e.keywords if k.arg]
    for k in e.keywords:  # ``**d`` of a dict this scope builds with literal keys: those keys are keywords too
        if k.arg is None and isinstance(k.value, ast.Name):
            named += [(key, line) for key, line in scan.dict_keys_of(k.value.id)
                      if key not in {n for n, _ in named}]
        elif k.arg is None and _literal_dict(k.value):  # ``**{"k": v}`` written in the call: exactly those keys
            named += [(key.value, key.lineno) for key in k.value.keys if key.value not in {n for n, _ in named}]
    scan.record(e, target, "call", rule=rule, keywords=tuple(n for n, _ in named),
                keyword_lines=tuple(line for _, line in named),
                positional=None if starred else len(e.args),
                splat=any(k.arg is None and not _literal_dict(k.value) for k in e.keywords),
                via=via, callables=callables(scan, e) if not starred else ())


def _literal_dict(node) -> bool:
    """``{"k": v, ...}`` with only string-constant keys (no ``**other`` inside): what a ``**`` of it passes is known."""
    return isinstance(node, ast.Dict) and all(isinstance(k, ast.Constant) and isinstance(k.value, str)
                                              for k in node.keys)


def callables(scan, e: ast.Call) -> tuple:
    """The arguments of a megatron call that are a project function: a name the innermost scope that binds it
    defines once (``def``, ``f = partial(g, ...)``, ``f = lambda ...``), such a ``partial``/``lambda`` written
    in the call, or what providers.py follows (a factory's return value, ``self.method``)."""
    found = ((slot, callable_of(scan, a, 0)) for slot, a in call_slots(e))
    return tuple((slot, *named) for slot, named in found if named)


def callable_of(scan, node, depth: int) -> tuple | None:
    """(name, signature, where) of a function expression (providers.py), or None."""
    named = project_callable(node, scan.function_signature)
    if named:
        return (*named, None)
    if isinstance(node, ast.Call) and depth < MAX_DEPTH:
        target = project_function(node.func, scan.module, scan.file.defs, scan.file.origins)
        if target and not scan.lookup(dotted(node.func)):
            arguments = tuple((slot, found) for slot, a in call_slots(node)
                              for found in (callable_of(scan, a, depth + 1),) if found)
            return f"{dotted(node.func)}(...)", "", (FACTORY, target, arguments)
    if not (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and isinstance(node.ctx, ast.Load)):
        return None
    owner = scan.functions[-1].owner if scan.functions else None
    if owner and node.value.id == owner[0]:
        return f"{owner[0]}.{node.attr}", "", (METHOD, owner[1], node.attr)
    value = scan.once().get(node.value.id)
    origin = scan.project_class(value.func) if isinstance(value, ast.Call) else None
    if origin:  # ``obj = ProjectClass(...)`` bound once in this function: its method
        return f"{node.value.id}.{node.attr}", "", (METHOD, origin, node.attr)
    return None
