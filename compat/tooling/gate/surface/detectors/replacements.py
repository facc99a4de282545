# SPDX-License-Identifier: Apache-2.0
"""A megatron callable replaced by a project function: ``megatron.x.f = my_f`` or ``setattr(megatron.x, "f",
my_f)``; megatron then calls the project's function in the original's place (a ``replacement`` use, checked in
overrides.py against megatron's own calls of it). A wrapper that takes only ``*args, **kwargs`` forwards to the
original, so assigning one is no replacement (and the name stays checked)."""
from __future__ import annotations

import ast

from ....ast_tools import statements
from ..definitions import only_splats
from ..kinds import FindingKind as F
from ..providers import DEF
from ..rule import Rule

RULE = Rule(
    id="replacements",
    sees="assignments and setattr of a project function over a megatron callable",
    records=("replacement",),
    findings=(F.OVERRIDE,),
    example="import megatron.core.utils as mu\nmu.get_model_config = my_get_model_config",
    misses="a value that is not a project function (a local, a module put in sys.modules, megatron's own); a "
           "lambda or a wrapper taking only *args, **kwargs",
)


def claims_setattr(scan, e: ast.Call, tail: str) -> bool:
    args = e.args
    if not (len(args) == 3 and isinstance(args[1], ast.Constant) and isinstance(args[1].value, str)):
        return False
    owner = scan.paths(args[0])
    replaced(scan, e, tuple(f"{p}.{args[1].value}" for p in owner or ()), args[2])
    return True


def visit_assign_target(scan, s: ast.Assign, t) -> None:
    if isinstance(t, ast.Attribute) and not scan.forwarding:
        replaced(scan, s, scan.paths(t), s.value)


def forwards(scan, value) -> bool:
    """A wrapper that takes only ``*args, **kwargs`` (and so forwards everything to what it wraps)."""
    if isinstance(value, ast.Lambda):
        return only_splats(value.args)
    return isinstance(value, ast.Name) and value.id in scan.file.forwarders and scan.lookup(value.id) is None


def replaced(scan, node, paths, value, rule: str = RULE.id) -> bool:
    """``paths`` (a megatron callable) replaced by the project function ``value`` names: a top-level def of
    this file or one imported from a project module, read once every file is scanned (providers.DEF). False
    when ``value`` is no such function (a module object put in ``sys.modules``, a local, megatron's own)."""
    if not paths or not isinstance(value, ast.Name) or scan.lookup(value.id):
        return False
    if not scan.at_module(value.id):  # imported in a function (a patch adaptor's method): one origin in the file
        origin = imported_in_defs(scan).get(value.id)
    elif value.id in scan.file.defs:
        origin = f"{scan.module}.{value.id}" if scan.file.defs[value.id] else None  # "": not one function
    else:
        origin = scan.file.origins.get(value.id)
    if origin:
        scan.record(node, paths, "replacement", rule=rule, callables=(("replaced", value.id, "", (DEF, origin)),))
    return bool(origin)


def imported_in_defs(scan) -> dict:
    """name -> "module.name" of the project names this file imports anywhere, functions included; a name
    imported from two places is left out."""
    facts = scan.file
    if facts.imported_in_defs is None:
        found: dict = {}
        for name, origin in scan.project_imports(statements(facts.tree.body, into_defs=True)):
            found[name] = origin if found.get(name, origin) == origin else None
        facts.imported_in_defs = {k: v for k, v in found.items() if v}
    return facts.imported_in_defs
