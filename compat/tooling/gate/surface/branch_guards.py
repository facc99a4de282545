# SPDX-License-Identifier: Apache-2.0
"""The guards a conditional gives each of its branches, as the project scan walks it: ``if hasattr(mpu, "x"):``,
``if HAVE_TE:`` (an import flag), ``if version >= ...``, ``if x == E.member:``; guards.py says what each guard
kind means.
"""
from __future__ import annotations

import ast

from ...ast_tools import dotted
from . import guards as g


def branch_guards(scan, test) -> tuple:
    """(guard of the body, guard of the else branch) of ``if test:``; either may be None.

    A ``hasattr``/``getattr`` probe on a megatron object protects the branch that runs when the attribute is
    there for that name, and makes the other branch a fallback that runs only where it is missing. A flag set
    by a try/except ImportError does the same for the imports of that try, and guards nothing else."""
    flagged = flag_branches(scan, test)
    if flagged is not None:
        return flagged
    guard = test_kind(scan, test)
    if not guard:
        return compared_branches(scan, test) or (None, None)
    if guard[0] in (g.TYPE_CHECKING, g.DEAD):
        return guard, None  # the else of TYPE_CHECKING runs
    negated = isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not)
    probed = probed_paths(scan, test.operand if negated else test) if guard[0] == g.PROBE else ()
    if not probed:
        return guard, guard
    fallback, taken = (g.PROBE_ELSE, probed), (g.PROBE_TAKEN, probed)
    return (fallback, taken) if negated else (taken, fallback)


def compared_branches(scan, test) -> tuple | None:
    """``if x == E.m:`` (or a local name assigned once to that comparison): the body runs only where a value can
    equal the megatron member ``E.m`` (check.py decides on the candidate); ``!=`` the else branch."""
    if isinstance(test, ast.Name) and scan.lookup(test.id) is None:
        value = scan.once().get(test.id)
        test = value if isinstance(value, ast.Compare) else test
    if not (isinstance(test, ast.Compare) and len(test.ops) == 1
            and isinstance(test.ops[0], (ast.Eq, ast.Is, ast.NotEq, ast.IsNot))):
        return None
    for side in (test.left, test.comparators[0]):
        members = scan.paths(side) if isinstance(side, ast.Attribute) else None
        if members:
            guard = (g.COMPARED, frozenset(members))
            return (guard, None) if isinstance(test.ops[0], (ast.Eq, ast.Is)) else (None, guard)
    return None


def flag_branches(scan, test) -> tuple | None:
    """``if HAVE_X:`` / ``if not use_old:`` / ``if HAVE_X and ...:`` on an import flag (see guards.import_flags)."""
    negated = isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not)
    inner = test.operand if negated else test
    conjunct = not negated and isinstance(inner, ast.BoolOp) and isinstance(inner.op, ast.And)
    names = [v for v in inner.values if isinstance(v, ast.Name)] if conjunct else [inner]
    flags = scan.hints.import_flags
    flag = next((flags[n.id] for n in names if isinstance(n, ast.Name) and n.id in flags and scan.lookup(n.id) is None),
                None)
    if flag is None:
        return None
    if not flag.imports:
        return None, None  # about another package: it guards no megatron use
    ok = (g.FLAG, flag.imports)
    fails = None if flag.other else (g.FALLBACK, flag.imports)  # other imports may fail alone: undecidable
    when_true, when_false = (ok, fails) if flag.true_when_ok else (fails, ok)
    if conjunct:
        return when_true, None
    return (when_false, when_true) if negated else (when_true, when_false)


def probed_paths(scan, test) -> tuple:
    """``hasattr(mpu, "x")`` / ``getattr(mpu, "x", None)`` as the whole test, or ``y == getattr(E, "x", None)``:
    the megatron names it asks about (the branch runs only where they exist)."""
    if isinstance(test, ast.Compare) and len(test.ops) == 1 and isinstance(test.ops[0], (ast.Eq, ast.Is, ast.In)):
        for side in (test.left, test.comparators[0]):
            if isinstance(side, ast.Call) and (dotted(side.func) or "") == "getattr" and len(side.args) == 3 \
                    and isinstance(side.args[2], ast.Constant) and side.args[2].value is None:
                return probed_paths(scan, side)
        return ()
    if not (isinstance(test, ast.Call) and (dotted(test.func) or "").split(".")[-1] in ("hasattr", "getattr")
            and len(test.args) >= 2 and isinstance(test.args[1], ast.Constant)
            and isinstance(test.args[1].value, str)):
        return ()
    owner = scan.paths(test.args[0])
    return tuple(f"{p}.{test.args[1].value}" for p in owner or ())


def test_kind(scan, test) -> tuple | None:
    guard = g.test_guard(test, scan.hints.flags, scan.scopes[-1].bound, scan.hints.guard_lines)
    if guard and guard[0] == g.AVAILABILITY:  # ``Foo is not None`` protects only Foo being absent
        local = next(iter(guard[1]))
        return g.AVAILABILITY, frozenset(p.split(".")[-1] for p in scan.lookup(local) or ())
    return guard
