"""Which code paths a project protects: ``try/except``, version checks, ``hasattr``/``getattr`` probes,
``inspect.signature`` filtering, feature flags, ``TYPE_CHECKING`` and dead branches.

A guard is a tuple ``(kind, line, catches)``: ``catches`` is the set of exception names a ``try`` handles ("*" for
bare ``except``, ``Exception`` or ``BaseException``); other kinds guard every failure.
"""
from __future__ import annotations

import ast
import re

from .model import dotted

TRY = "try/except"
VERSION = "version check"
PROBE = "hasattr/getattr probe"
SIGNATURE = "inspect.signature check"
FLAG = "feature flag"
AVAILABILITY = "availability check"
TYPE_CHECKING = "TYPE_CHECKING"
DEAD = "dead code"
EARLY_EXIT = "early exit"

_CATCH_ALL = {"Exception", "BaseException"}
_FLAG = re.compile(r"^_*(HAVE|HAS|IS)_[A-Z0-9_]+$|_AVAILABLE$|^_*(have|has)_[a-z0-9_]+$")
# Which exception each failure raises at run time, and what catches it.
RAISES = {
    "import": {"ImportError", "ModuleNotFoundError"},
    "attribute": {"AttributeError"},
    "call": {"TypeError"},
}


def handler_names(handler: ast.ExceptHandler) -> set[str]:
    if handler.type is None:
        return {"*"}
    types = handler.type.elts if isinstance(handler.type, ast.Tuple) else [handler.type]
    names = {(dotted(t) or "?").split(".")[-1] for t in types}
    return {"*"} if names & _CATCH_ALL else names


def try_catches(handlers) -> set[str]:
    """The exceptions a try statement swallows; a handler whose last statement re-raises protects nothing."""
    caught: set[str] = set()
    for handler in handlers:
        if handler.body and isinstance(handler.body[-1], ast.Raise):
            continue
        caught |= handler_names(handler)
    return caught


def catches(guard: tuple, failure: str) -> bool:
    kind, _line, caught = guard
    if kind != TRY:
        return True
    return "*" in caught or bool(caught & RAISES.get(failure, set()))


def _is_version_name(text: str) -> bool:
    low = text.lower()
    return "version" in low and "version_info" not in low


def test_guard(test, version_flags: set[str], megatron_names: set[str]) -> str | None:
    """The kind of guard an ``if``/``while``/ternary/boolean test is, or None."""
    if isinstance(test, ast.Constant) and not test.value:
        return DEAD
    for node in ast.walk(test):
        if isinstance(node, ast.Call):
            name = dotted(node.func) or ""
            tail = name.split(".")[-1]
            if tail in ("hasattr", "getattr"):
                return PROBE
            if tail == "signature":
                return SIGNATURE
            if _is_version_name(name):
                return VERSION
        elif isinstance(node, ast.Attribute) and node.attr == "parameters":
            return SIGNATURE
        elif isinstance(node, (ast.Name, ast.Attribute)):
            name = dotted(node) or ""
            tail = name.split(".")[-1]
            if tail == "TYPE_CHECKING":
                return TYPE_CHECKING
            if name in version_flags or _is_version_name(name):
                return VERSION
            if _FLAG.search(tail):
                return FLAG
        elif isinstance(node, ast.Compare) and isinstance(node.left, ast.Name) and node.left.id in megatron_names:
            if any(isinstance(op, (ast.Is, ast.IsNot)) for op in node.ops):
                return AVAILABILITY  # ``if Foo is not None`` after ``except ImportError: Foo = None``
    return None


def exits(body: list) -> bool:
    """A block that always leaves: its last statement returns, raises, continues or breaks."""
    return bool(body) and isinstance(body[-1], (ast.Return, ast.Raise, ast.Continue, ast.Break))


def suppress_catches(item: ast.withitem) -> set[str] | None:
    """``with contextlib.suppress(ImportError, ...)``: the exceptions it swallows."""
    call = item.context_expr
    if isinstance(call, ast.Call) and (dotted(call.func) or "").split(".")[-1] == "suppress":
        names = {(dotted(a) or "?").split(".")[-1] for a in call.args}
        return {"*"} if names & _CATCH_ALL else names
    return None


def version_flags(tree: ast.Module) -> set[str]:
    """Names assigned from a version comparison anywhere in the file (``MCORE_GE_014 = Version(v) >= ...``)."""
    flags = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and test_guard(node.value, set(), set()) == VERSION:
            for target in node.targets:
                if isinstance(target, ast.Name):
                    flags.add(target.id)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and _returns_version_check(node):
            flags.add(node.name)
    return flags


def _returns_version_check(node) -> bool:
    returns = [n for n in ast.walk(node) if isinstance(n, ast.Return) and n.value is not None]
    return bool(returns) and all(test_guard(r.value, set(), set()) == VERSION for r in returns)
