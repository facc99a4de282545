# SPDX-License-Identifier: Apache-2.0
"""The project scan's detectors: what is a use of megatron, one module per rule family, each with its ``RULE``
(rule.Rule: what it sees, what it records, an example, what it misses); ``rules()`` lists them all.

Modules: ``imports``, ``dynamic_imports``, ``attributes``, ``probes``, ``signature_checks``, ``megatron_calls``,
``partials``, ``super_calls``, ``instance_members``, ``method_overrides``, ``replacements``, ``registrations``,
``specs``, ``class_values``, ``project_calls``. The scanner (scanner.py) knows Python and calls the hooks below at
each node of their kind; a detector records through ``scan.record`` (or appends a ``Use``) and reads the scanner's
names, scopes and guards.
"""
from __future__ import annotations

import ast

from ....ast_tools import dotted
from . import (
    attributes,
    class_values,
    dynamic_imports,
    imports,
    instance_members,
    megatron_calls,
    method_overrides,
    partials,
    probes,
    project_calls,
    registrations,
    replacements,
    signature_checks,
    specs,
    super_calls,
)

DETECTORS = (imports, dynamic_imports, attributes, probes, signature_checks, megatron_calls, partials, super_calls,
             instance_members, method_overrides, replacements, registrations, specs, class_values, project_calls)


def rules() -> tuple:
    """Every detector's Rule, in the order of DETECTORS."""
    return tuple(module.RULE for module in DETECTORS)


# The call forms a call is one of, by the last part of its callee's name, in the order they are tried (the first
# that claims the call ends the search): a dotted-path registration may be any call.
_ANY_CALL = (registrations.claims,)
_CALL_FORMS = {"getattr": (probes.claims, *_ANY_CALL), "hasattr": (probes.claims, *_ANY_CALL),
               "signature": (signature_checks.claims, *_ANY_CALL),
               "import_module": (dynamic_imports.claims, *_ANY_CALL), "__import__": (dynamic_imports.claims, *_ANY_CALL),
               "setattr": (replacements.claims_setattr, *_ANY_CALL), "partial": (*_ANY_CALL, partials.claims)}

visit_import = imports.visit_import  # an Import or ImportFrom statement
visit_assign = specs.visit_assign  # an Assign statement, before its value is walked
forwards = replacements.forwards  # the value of an Assign: a forwarding wrapper (its targets set nothing)
visit_assign_target = replacements.visit_assign_target  # each target of an Assign, once walked
visit_class = method_overrides.visit_class  # a ClassDef, its bases walked, before its body
visit_name = attributes.visit_name  # a Name expression


def visit_attribute(scan, e: ast.Attribute) -> bool:
    """An Attribute expression: True when a detector recorded it (nothing below it is walked then)."""
    return instance_members.visit_attribute(scan, e) or attributes.visit_attribute(scan, e)


def visit_call(scan, e: ast.Call) -> None:
    """A Call expression, before its arguments are walked: the call forms, ``super().__init__``, a spec, then the
    callee (megatron's, or the project's own)."""
    tail = (dotted(e.func) or "").split(".")[-1]
    for claims in _CALL_FORMS.get(tail, _ANY_CALL):
        if claims(scan, e, tail):
            break
    super_calls.visit_call(scan, e)
    target = scan.paths(e.func)
    specs.visit_call(scan, e, target)
    if not megatron_calls.visit_call(scan, e, target):
        class_values.visit_call(scan, e)
        project_calls.visit_call(scan, e)
        scan.expr(e.func)
