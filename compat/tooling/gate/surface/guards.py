# SPDX-License-Identifier: Apache-2.0
"""Which code paths a project protects: ``try/except``, version checks, ``hasattr``/``getattr`` probes,
``inspect.signature`` filtering, feature flags, ``TYPE_CHECKING`` and dead branches.

A guard is a tuple ``(kind, line, detail)``. For a ``try``, ``detail`` is the set of exception names it handles
("*" for bare ``except``, ``Exception`` or ``BaseException``); for a probe or a signature check, the attribute or
keyword names it asks about (it protects only failures of those names; None: any); for a fallback (the handler of
``except ImportError``, or the other branch of a ``hasattr`` probe), the names the ``try`` imported or the probe
asked about: the fallback runs only where one of them is missing.
"""
from __future__ import annotations

import ast
import re
from dataclasses import dataclass

from ...ast_tools import dotted, statements
from .kinds import GuardKind
from .spelling import Lines, Spelling

TRY = GuardKind.TRY
VERSION = GuardKind.VERSION
PROBE = GuardKind.PROBE
SIGNATURE = GuardKind.SIGNATURE
FLAG = GuardKind.FLAG
AVAILABILITY = GuardKind.AVAILABILITY
TYPE_CHECKING = GuardKind.TYPE_CHECKING
DEAD = GuardKind.DEAD
FALLBACK = GuardKind.FALLBACK
PROBE_ELSE = GuardKind.PROBE_ELSE
PROBE_TAKEN = GuardKind.PROBE_TAKEN
COMPUTED_SET = GuardKind.COMPUTED_SET
COMPARED = GuardKind.COMPARED
REBOUND = GuardKind.REBOUND
OPTIONAL = GuardKind.OPTIONAL
SWITCHED = GuardKind.SWITCHED

_CATCH_ALL = {"Exception", "BaseException"}
IMPORT_FAILURES = frozenset({"*", "ImportError", "ModuleNotFoundError"})  # handler names that catch a failed import
# Import-availability flags (HAVE_TE, HAS_APEX, _TE_AVAILABLE), not data flags such as has_packed
# Which exception each failure raises at run time, and what catches it.
RAISES = {
    "import": {"ImportError", "ModuleNotFoundError"},
    "attribute": {"AttributeError"},
    "call": {"TypeError"},
}


def handler_names(handler: ast.ExceptHandler) -> set[str]:
    if handler.type is None:
        return {"*"}
    names = {(dotted(t) or "?").split(".")[-1] for t in handler_types(handler.type)}
    return {"*"} if names & _CATCH_ALL else names


def handler_types(node) -> list:
    """The classes an ``except`` clause's expression evaluates to, by Python's semantics: a tuple's elements; a
    class is truthy, so ``A or B`` is ``A`` and ``A and B`` is ``B`` (``except ImportError or X:`` catches only
    ImportError)."""
    if isinstance(node, ast.Tuple):
        return [t for e in node.elts for t in handler_types(e)]
    if isinstance(node, ast.BoolOp):
        return handler_types(node.values[0] if isinstance(node.op, ast.Or) else node.values[-1])
    return [node]


def reraises(handler: ast.ExceptHandler) -> bool:
    """A handler whose last statement raises: it protects nothing, and what it binds is never read after it."""
    return bool(handler.body) and isinstance(handler.body[-1], ast.Raise)


def try_catches(handlers) -> set[str]:
    """The exceptions a try statement swallows (a handler that re-raises protects nothing)."""
    caught: set[str] = set()
    for handler in handlers:
        if not reraises(handler):
            caught |= handler_names(handler)
    return caught


def catches(guard: tuple, raised: str | None, names: set) -> bool:
    """Does ``guard`` protect a failure that raises ``raised`` (import/attribute/call) about ``names``?"""
    kind, _line, detail = guard[:3]
    if kind == TRY:
        return raised is None or "*" in detail or bool(detail & RAISES.get(raised, set()))
    if kind in (PROBE, SIGNATURE) and detail:
        return bool(detail & names)
    if kind == AVAILABILITY:
        return raised in ("import", "attribute") and bool(detail & names)
    if kind in (FLAG, REBOUND, OPTIONAL, SWITCHED):  # runs only where those imports resolve: protects failures of those names
        return raised in ("import", "attribute") and any(d == n or d.startswith(n + ".")
                                                         for d in detail for n in names if "." in n)
    if kind == COMPUTED_SET:  # the class may set the member it reads, not change a signature
        return raised == "attribute"
    if kind == PROBE_TAKEN:
        return bool({d.rsplit(".", 1)[-1] for d in detail} & names)
    return kind not in _DECIDED_BY_CANDIDATE


# decided against the candidate (check.py), whatever the failure raises
_DECIDED_BY_CANDIDATE = (FALLBACK, PROBE_ELSE, COMPARED)


def guards_for(raised: str | None) -> list[GuardKind]:
    """The guard kinds that can protect a failure raising ``raised`` (import/attribute/call; None: a deprecation),
    asked of ``catches`` itself with a guard about the failing name (the rule catalogue lists them). Swallowed
    modules (swallowed.py) protect any failure at a module's top level and are not a guard tuple."""
    names = {"megatron.core.name", "name"}
    out = []
    for kind in GuardKind:
        if kind == GuardKind.SWALLOWED:
            continue
        detail = frozenset(RAISES.get(raised, ())) if kind == TRY else frozenset(names)
        if kind in _DECIDED_BY_CANDIDATE or catches((kind, 0, detail), raised, names):
            out.append(kind)
    return out


_VERSION_FLAG = re.compile(r"(mcore|megatron)_?(ge|gt|lt|le|eq)?_?v?\d")  # mcore_017, MCORE_GE_0_14
VERSIONISH = re.compile(r"version|(mcore|megatron)_?(ge|gt|lt|le|eq)?_?v?\d", re.IGNORECASE)  # worth a flag pass
_WORDS = re.compile(r"[A-Z]?[a-z0-9]+|[A-Z]+(?![a-z])")
# A version test of one of these is about that package, not about megatron-core (``torch.__version__``, TE's).
_OTHER_PACKAGES = {"torch", "te", "transformer", "transformers", "engine", "flash", "attn", "vllm", "sglang",
                   "apex", "deepspeed", "python", "sys", "platform", "cuda", "nccl", "triton", "numpy", "hf",
                   "modelopt", "peft", "accelerate", "info"}


def _words(text: str) -> set[str]:
    return {w.lower() for part in re.split(r"[._\-\s]", text) for w in _WORDS.findall(part)}


def _is_version_name(text: str) -> bool:
    """A name with the word ``version`` (not ``conversion``), or an ``mcore``/``megatron`` version flag."""
    low = text.lower()
    if "ver" not in low and "mcore" not in low and "megatron" not in low:
        return False
    return bool(_VERSION_FLAG.search(text.lower())) or bool(_words(text) & {"version", "ver"})


def _about_other_package(test, megatron_names: set[str]) -> bool:
    """A version test that names another package (``torch.__version__``, ``is_te_min_version``) and not megatron:
    neither by a word nor by reading the version of a name the file bound to megatron (``package_info.__version__``
    after ``from megatron.core import package_info``; a megatron helper about another package's version,
    ``is_te_min_version``, is still about that package)."""
    words: set[str] = set()
    for node in ast.walk(test):
        text = dotted(node) if isinstance(node, (ast.Name, ast.Attribute)) else (
            node.value if isinstance(node, ast.Constant) and isinstance(node.value, str) else None)
        if text:
            if isinstance(node, ast.Attribute) and "version" in node.attr.lower() \
                    and text.split(".")[0] in megatron_names:
                return False
            words |= _words(text)
    return not (words & {"megatron", "mcore"}) and bool(words & _OTHER_PACKAGES)


def guard_lines(spelling: Spelling, version_flags: set[str]) -> Lines:
    """The lines on which a test can be a guard: those spelling what ``_test_guard`` looks for (a probe, a signature
    check, ``TYPE_CHECKING``, a version name or one of the file's version flags, an ``is`` comparison)."""
    return spelling.lines(words=("hasattr", "getattr", "signature", "parameters", "TYPE_CHECKING", "is",
                                 *version_flags), version=True)


def test_guard(test, version_flags: set[str], megatron_names: set[str], lines: Lines | None = None
               ) -> tuple | None:
    """``(kind, detail)`` when an ``if``/``while``/ternary/boolean test is a guard, else None. A version test
    guards only when it is about megatron-core's version, not another package's. ``lines``: where the file's tests
    can be guards (``guard_lines``, or a subset fit for the question asked); a test elsewhere is not walked."""
    if lines is not None and not lines.spans(test):
        return (DEAD, None) if isinstance(test, ast.Constant) and not test.value else None
    guard = _test_guard(test, version_flags, megatron_names)
    if guard and guard[0] == VERSION and _about_other_package(test, megatron_names):
        return None
    return guard


def _test_guard(test, version_flags: set[str], megatron_names: set[str]) -> tuple | None:
    # Whatever this looks for must be spelled by one of guard_lines' words: a test on no such line is not walked.
    if isinstance(test, ast.Constant) and not test.value:
        return DEAD, None
    for node in ast.walk(test):
        if isinstance(node, ast.Call):
            name = dotted(node.func) or ""
            tail = name.split(".")[-1]
            if tail in ("hasattr", "getattr"):
                attr = node.args[1] if len(node.args) > 1 else None
                known = isinstance(attr, ast.Constant) and isinstance(attr.value, str)
                return PROBE, frozenset({attr.value}) if known else None
            if tail == "signature":
                return SIGNATURE, _compared_strings(test)
            if _is_version_name(name):
                return VERSION, None
        elif isinstance(node, ast.Attribute) and node.attr == "parameters":
            return SIGNATURE, _compared_strings(test)
        elif isinstance(node, (ast.Name, ast.Attribute)):
            name = dotted(node) or ""
            tail = name.split(".")[-1]
            if tail == "TYPE_CHECKING":
                return TYPE_CHECKING, None
            if name in version_flags or _is_version_name(name):
                return VERSION, None
        elif isinstance(node, ast.Compare) and isinstance(node.left, ast.Name) and node.left.id in megatron_names:
            if any(isinstance(op, (ast.Is, ast.IsNot)) for op in node.ops):
                return AVAILABILITY, frozenset({node.left.id})  # ``if Foo is not None`` after ``Foo = None``
    return None


def _compared_strings(test) -> frozenset | None:
    """``"vp_stage" in inspect.signature(f).parameters``: the keyword names a signature check asks about."""
    found = {n.value for n in ast.walk(test) if isinstance(n, ast.Constant) and isinstance(n.value, str)}
    return frozenset(found) or None


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


def version_flags(tree: ast.Module, every: list | None = None, spelling: Spelling | None = None) -> set[str]:
    """Names assigned from a version comparison anywhere in the file (``MCORE_GE_014 = Version(v) >= ...``);
    ``every``: the file's statements, when the caller already walked them; ``spelling``: the file's source, so that
    only values on lines spelling a version name are walked."""
    lines = spelling.lines(version=True) if spelling is not None else None
    flags = set()
    for node in every if every is not None else statements(tree.body, into_defs=True):
        if isinstance(node, ast.Assign) and isinstance(node.value, (ast.Compare, ast.Call, ast.BoolOp)) and \
                (test_guard(node.value, set(), set(), lines) or (None,))[0] == VERSION:
            for target in node.targets:
                if isinstance(target, ast.Name):
                    flags.add(target.id)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and _returns_version_check(node, lines):
            flags.add(node.name)
    return flags


def _returns_version_check(node, lines: Lines | None = None) -> bool:
    """A small helper whose top-level returns are version comparisons (``def mcore_ge_014(): return ...``)."""
    returns = [n for n in node.body if isinstance(n, ast.Return) and n.value is not None]
    return bool(returns) and all((test_guard(r.value, set(), set(), lines) or (None,))[0] == VERSION
                                 for r in returns)


@dataclass(frozen=True)
class ImportFlag:
    """A name set to True/False by a ``try: import ... except ImportError:`` (``HAVE_TE``, ``use_old_megatron``)."""
    line: int
    imports: frozenset  # the megatron names the try imports
    other: bool  # the try also imports something outside megatron
    true_when_ok: bool  # the flag's value where every import succeeds


def _imported(body: list) -> tuple[set, bool]:
    names, other = set(), False
    for s in statements(body):
        if isinstance(s, ast.Import):
            for a in s.names:
                if a.name == "megatron" or a.name.startswith("megatron."):
                    names.add(a.name)
                else:
                    other = True
        elif isinstance(s, ast.ImportFrom):
            if s.level == 0 and s.module and (s.module == "megatron" or s.module.startswith("megatron.")):
                names |= {f"{s.module}.{a.name}" if a.name != "*" else s.module for a in s.names}
            else:
                other = True
    return names, other


def _bool_assignments(body: list) -> dict[str, bool]:
    out = {}
    for s in body:
        if isinstance(s, ast.Assign) and isinstance(s.value, ast.Constant) and isinstance(s.value.value, bool):
            out.update({t.id: s.value.value for t in s.targets if isinstance(t, ast.Name)})
    return out


def _disabling(handlers):
    for handler in handlers:
        for s in handler.body:
            if isinstance(s, ast.Assign) and isinstance(s.value, ast.Constant) and s.value.value in (False, None):
                yield from ((t.id, s.value.value) for t in s.targets if isinstance(t, ast.Name))


def disabled_by(handlers) -> list[str]:
    """What an ``except ImportError:`` handler turns off: ``X = False`` / ``X = None`` at its top level."""
    return [f"{name} = {value}" for name, value in _disabling(handlers)]


def disabled_names(handlers) -> list[str]:
    """The names of ``disabled_by``: the flags (or fallback names) a feature switch would test."""
    return list(dict.fromkeys(name for name, _value in _disabling(handlers)))


def import_flags(tree: ast.Module, every: list | None = None) -> dict[str, ImportFlag]:
    """Flags bound by a try/except ImportError anywhere in the file: what they are about and their value."""
    flags: dict[str, ImportFlag] = {}
    for node in every if every is not None else statements(tree.body, into_defs=True):
        if not (isinstance(node, ast.Try) or type(node).__name__ == "TryStar"):
            continue
        caught = try_catches(node.handlers)
        if not caught & IMPORT_FAILURES:
            continue
        imports, other = _imported(node.body)
        if not imports and not other:
            continue
        in_try = _bool_assignments(node.body)
        in_handler: dict[str, bool] = {}
        for handler in node.handlers:
            in_handler.update(_bool_assignments(handler.body))
        for name in set(in_try) | set(in_handler):
            ok = in_try[name] if name in in_try else not in_handler[name]
            flags[name] = ImportFlag(node.lineno, frozenset(imports), other, ok)
    return flags
