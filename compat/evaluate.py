# SPDX-License-Identifier: Apache-2.0
"""A small, restricted evaluator for ``__post_init__`` conditions kept as text.

It understands ``self.<field>``, constants, tuples/lists/sets of them, ``and``/``or``/``not``, comparisons
(``in``, ``is`` included), ``+ - * / // %``, conditional expressions, ``torch.<dtype>`` and the builtins
``len``, ``isinstance`` (against builtin types), ``bool``, ``int``, ``float``, ``str``, ``any``, ``all``, ``min``,
``max``, ``abs``. ``unsupported`` says statically why an expression is outside that language; ``evaluate`` returns
UNKNOWN whenever a value is missing or an operation fails. Callers skip what is UNKNOWN: nothing is guessed.

Every value the evaluator reads or makes is sized before it is used and before an operation builds its result:
``size`` is about the length of its ``str()`` (a str its length, an int its digits, a container the sizes of its
items, shared items counted each time they occur). An operand or a result over MAX_VALUE_SIZE, an int over
MAX_INT_BITS, or a ``%`` format with a ``*`` or a width or precision over MAX_FORMAT_WIDTH makes the value UNKNOWN,
so the check is skipped: a candidate's ``'a' * 10000 * 10000``, ``'%0999999999d' % 1`` or a user's 200,000-digit
int costs microseconds, not gigabytes or seconds. Work is bounded too: each value made is charged its size plus a
fixed cost per node against a ``Work`` budget (MAX_WORK, about a second), which the pre-check shares across all
checks of one call; once it is spent, what is left is UNKNOWN.
"""
from __future__ import annotations

import ast
import re
import threading
from collections.abc import Callable, Collection, Mapping
from functools import lru_cache

from .dtypes import dtype_name

_BUILTIN_TYPES = {"list": list, "tuple": tuple, "dict": dict, "set": set, "str": str, "int": int, "float": float,
                  "bool": bool, "type(None)": type(None)}
_FUNCTIONS = {"len": len, "bool": bool, "int": int, "float": float, "str": str, "any": any, "all": all,
              "min": min, "max": max, "abs": abs, "isinstance": isinstance}
_BINOPS = {ast.Add: lambda a, b: a + b, ast.Sub: lambda a, b: a - b, ast.Mult: lambda a, b: a * b,
           ast.Div: lambda a, b: a / b, ast.FloorDiv: lambda a, b: a // b, ast.Mod: lambda a, b: a % b}
_CMPOPS = {ast.Eq: lambda a, b: a == b, ast.NotEq: lambda a, b: a != b, ast.Lt: lambda a, b: a < b,
           ast.LtE: lambda a, b: a <= b, ast.Gt: lambda a, b: a > b, ast.GtE: lambda a, b: a >= b,
           ast.In: lambda a, b: a in b, ast.NotIn: lambda a, b: a not in b}
MAX_VALUE_SIZE = 100_000  # about the characters of str(value): the largest value read or made
MAX_INT_BITS = 4096  # 1,233 digits; Megatron's checks compare sizes, counts and ratios
MAX_FORMAT_WIDTH = 1000  # width or precision in a '%' format
MAX_WORK = 16_000_000  # per Work budget: 250,000 node visits, or values adding up to 16 M characters
_NODE_COST = 64
_FORMAT_SPEC = re.compile(r"%(?:\([^)]*\))?[-#0 +]*(\*|\d+)?(?:\.(\*|\d*))?")


_CONTAINERS = (list, tuple, set, frozenset, dict)


class _TooLarge(Exception):
    """A value over a size cap: the expression's value is UNKNOWN."""


def size(value, limit: int = MAX_VALUE_SIZE) -> int:
    """About len(str(value)), computed without building it; stops counting (returns > limit) past ``limit``."""
    total, stack = 0, [value]
    while stack:
        v = stack.pop()
        if isinstance(v, str):
            total += len(v) + 2
        elif isinstance(v, bool) or v is None:
            total += 5
        elif isinstance(v, int):
            total += v.bit_length() * 3 // 10 + 2
        elif type(v) in _CONTAINERS:  # exactly the builtins: a user's subclass may iterate without end
            total += 2 + 2 * len(v)
            if total <= limit:
                stack.extend(v.items() if type(v) is dict else v)
        elif isinstance(v, (list, tuple, set, frozenset, dict)):
            return limit + 1  # a subclass of a container: not sized, so not used
        else:  # float, Dtype, UNKNOWN, anything else a user passed: its str is short or not used by the evaluator
            total += 25
        if total > limit:
            return total
    return total


class Work:
    """What evaluations may still spend (a pre-check shares one across the checks of a call)."""

    __slots__ = ("left",)

    def __init__(self, budget: int = MAX_WORK):
        self.left = budget


_CURRENT = threading.local()  # the Work of the evaluation running in this thread


def _bounded(value):
    """``value`` itself, charged to the current Work, or _TooLarge when it is over a cap or the budget is spent."""
    cost = _NODE_COST
    if isinstance(value, int) and not isinstance(value, bool) and value.bit_length() > MAX_INT_BITS:
        raise _TooLarge()
    if isinstance(value, (str, list, tuple, set, frozenset, dict)):
        cost += size(value)
        if cost > MAX_VALUE_SIZE + _NODE_COST:
            raise _TooLarge()
    work = _CURRENT.work
    work.left -= cost
    if work.left < 0:
        raise _TooLarge()
    return value


def _result_fits(op: type, left, right) -> bool:
    """Whether ``left op right`` may be built: its size is bounded from the operands' before it is computed."""
    if op is ast.Mult:
        for seq, count in ((left, right), (right, left)):
            if isinstance(seq, (str, list, tuple)) and isinstance(count, int):
                return count <= 0 or (size(seq) - 2) * count + 2 <= MAX_VALUE_SIZE  # the brackets once
        if isinstance(left, int) and isinstance(right, int):
            return left.bit_length() + right.bit_length() <= MAX_INT_BITS
    if op is ast.Add and isinstance(left, (str, list, tuple)):
        return size(left) + size(right) <= MAX_VALUE_SIZE
    if op is ast.Mod and isinstance(left, str):
        widths = 0
        for match in _FORMAT_SPEC.finditer(left):
            for number in match.groups():
                if number == "*" or (number and int(number) > MAX_FORMAT_WIDTH):
                    return False
                widths += int(number or 0)
        return len(left) + widths + size(right) <= MAX_VALUE_SIZE
    return True


class _Unknown:
    def __repr__(self):
        return "UNKNOWN"

    def __bool__(self):
        raise TypeError("UNKNOWN has no truth value")


UNKNOWN = _Unknown()


class Dtype:
    """A torch dtype by name: equal only to the same dtype (as torch dtypes are), never to a string."""

    __slots__ = ("name",)

    def __init__(self, name: str):
        self.name = name

    def __eq__(self, other):
        return isinstance(other, Dtype) and other.name == self.name

    def __hash__(self):
        return hash(("dtype", self.name))

    def __repr__(self):
        return f"torch.{self.name}"


class EnumMember:
    """A member of one of the release's Enum classes, named in a check (``Fp8Recipe.delayed``): equal to the real
    member of that name (a user's value when megatron is installed), to another EnumMember of that name and, for an
    Enum that mixes in str or int, to its value, as the real member is. It has no truth value and no order: what
    asks for one is UNKNOWN."""

    __slots__ = ("enum", "name", "value", "mixin")

    def __init__(self, enum: str, name: str, value, mixin: str | None):
        self.enum, self.name, self.value, self.mixin = enum, name, value, mixin

    def same(self, other) -> bool:
        """``is``: the same member (real members are singletons; a str value is never one)."""
        if isinstance(other, EnumMember):
            return (other.enum, other.name) == (self.enum, self.name)
        return type(other).__name__ == self.enum and getattr(other, "name", None) == self.name and \
            type(other).__module__.startswith("megatron.")

    def __eq__(self, other):
        if self.same(other):
            return True
        if self.mixin is not None and self.value is not None and type(other).__name__ == self.mixin:
            return other == self.value
        return False

    def __hash__(self):
        return hash(self.value) if self.mixin is not None and self.value is not None else hash(self.name)

    def __bool__(self):
        raise TypeError("an Enum member's truth value is not modelled")

    def __repr__(self):
        return f"{self.enum}.{self.name}"


def _enum_member(node: ast.expr, enums: Mapping) -> EnumMember | None:
    if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in enums:
        facts = enums[node.value.id]
        name = facts.get("aliases", {}).get(node.attr, node.attr)
        if node.attr in facts["members"]:
            return EnumMember(node.value.id, name, facts["members"][name], facts["mixin"])
    return None


def _torch_dtype(node: ast.expr) -> str | None:
    if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "torch":
        return dtype_name(f"torch.{node.attr}")
    return None


def _is_self_field(node: ast.expr) -> bool:
    return isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "self"


def unsupported(node: ast.expr, functions: Collection[str] = (), names: Collection[str] = (),
                enums: Mapping | None = None) -> str | None:
    """Why ``node`` is outside the evaluator's language, or None when it is inside. ``functions``: names of the
    caller's own functions the expression may call too (see ``evaluate``); ``names``: the local variables it may
    read (``__post_init__``'s, bound before the expression; ``evaluate`` reads them with ``scope``); ``enums``: the
    release's Enum classes it may name members of (``Schema.enums``)."""
    _CURRENT.static_enums = enums or {}
    return _unsupported(node, functions, names)


def _unsupported(node: ast.expr, functions: Collection[str], names: Collection[str]) -> str | None:
    if isinstance(node, ast.Constant):
        return None if isinstance(node.value, (bool, int, float, str, type(None))) else "a non-scalar constant"
    if _is_self_field(node) or _torch_dtype(node):
        return None
    if isinstance(node, ast.BoolOp):
        return _first(node.values, functions, names)
    if isinstance(node, ast.UnaryOp):
        if not isinstance(node.op, (ast.Not, ast.USub, ast.UAdd)):
            return "an operator"
        return _unsupported(node.operand, functions, names)
    if isinstance(node, ast.BinOp):
        if type(node.op) not in _BINOPS:
            return f"the operator {type(node.op).__name__}"
        return _first([node.left, node.right], functions, names)
    if isinstance(node, ast.Compare):
        if any(type(op) not in _CMPOPS and not isinstance(op, (ast.Is, ast.IsNot)) for op in node.ops):
            return "a comparison it does not know"
        return _first([node.left, *node.comparators], functions, names)
    if isinstance(node, ast.IfExp):
        return _first([node.test, node.body, node.orelse], functions, names)
    if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
        return _first(node.elts, functions, names)
    if isinstance(node, ast.Call):
        name = node.func.id if isinstance(node.func, ast.Name) else None
        if (name not in _FUNCTIONS and name not in functions) or node.keywords:
            return f"a call of {ast.unparse(node.func)}"
        if name == "isinstance":
            if len(node.args) != 2 or not _type_arg(node.args[1]):
                return "isinstance against a non-builtin type"
            return _unsupported(node.args[0], functions, names)
        return _first(node.args, functions, names)
    if isinstance(node, ast.Name):
        return None if node.id in names else f"the name {node.id}"
    if isinstance(node, ast.Attribute):
        return None if _enum_member(node, _CURRENT.static_enums) is not None else f"the attribute {ast.unparse(node)}"
    return f"a {type(node).__name__} expression"


def _first(nodes, functions: Collection[str], names: Collection[str]) -> str | None:
    for n in nodes:
        why = _unsupported(n, functions, names)
        if why:
            return why
    return None


def _type_arg(node: ast.expr):
    if isinstance(node, ast.Name) and node.id in _BUILTIN_TYPES:
        return (_BUILTIN_TYPES[node.id],)
    if isinstance(node, ast.Tuple):
        parts = [_type_arg(e) for e in node.elts]
        return None if not all(parts) else tuple(t for p in parts for t in p)
    return None


@lru_cache(maxsize=8192)
def _expr(text: str) -> ast.expr:
    return ast.parse(text, mode="eval").body


def evaluate(text: str, env: dict, work: Work | None = None,
             functions: Mapping[str, Callable] | None = None, scope: str | None = None, enums: Mapping | None = None):
    """The value of ``text`` given ``env`` (field name -> value, dtypes as ``Dtype``), or UNKNOWN. ``work``: the
    budget to charge (a fresh MAX_WORK when None). ``functions``: the caller's own functions the text may call by
    name, beside the builtins (the curated checks' environment functions); each returns a value or UNKNOWN.
    ``scope``: a bare name ``x`` is the local variable ``env["<scope>.x"]`` (``local_key``); without, UNKNOWN.
    ``enums``: Enum class -> its facts (``Schema.enums``): ``E.member`` is an ``EnumMember``."""
    try:
        return _within(work or Work(), _eval, _expr(text), env, functions=functions or {}, scope=scope, enums=enums)
    except (TypeError, ValueError, ArithmeticError, AttributeError, KeyError, IndexError, RecursionError,
            MemoryError, SyntaxError, _TooLarge):
        return UNKNOWN


def _within(work: Work, fn, *args, functions: Mapping[str, Callable] | None = None, scope: str | None = None,
            enums: Mapping | None = None):
    outer = tuple(getattr(_CURRENT, k, None) for k in ("work", "functions", "scope", "enums"))
    _CURRENT.work, _CURRENT.functions, _CURRENT.scope, _CURRENT.enums = work, functions or {}, scope, enums or {}
    try:
        return fn(*args)
    finally:
        _CURRENT.work, _CURRENT.functions, _CURRENT.scope, _CURRENT.enums = outer


def local_key(scope: str, name: str) -> str:
    """The env key of local variable ``name`` of ``scope``'s ``__post_init__`` (a dot: never a field's name)."""
    return f"{scope}.{name}"


def truth(value):
    """True, False or UNKNOWN."""
    if value is UNKNOWN:
        return UNKNOWN
    try:
        return bool(value)
    except Exception:  # a user value with an odd __bool__ (an array) has no truth value we can trust
        return UNKNOWN


def _eval(node: ast.expr, env: dict):
    return _bounded(_value(node, env))


def _value(node: ast.expr, env: dict):
    if isinstance(node, ast.Constant):
        return node.value
    if _is_self_field(node):
        return env.get(node.attr, UNKNOWN)
    if isinstance(node, ast.Name):
        scope = _CURRENT.scope
        return UNKNOWN if scope is None else env.get(local_key(scope, node.id), UNKNOWN)
    dtype = _torch_dtype(node)
    if dtype:
        return Dtype(dtype)
    if isinstance(node, ast.Attribute):
        member = _enum_member(node, _CURRENT.enums)
        return UNKNOWN if member is None else member
    if isinstance(node, ast.BoolOp):
        is_and = isinstance(node.op, ast.And)
        result = None
        for sub in node.values:
            result = _eval(sub, env)
            t = truth(result)
            if t is UNKNOWN:
                return UNKNOWN
            if t is not is_and:  # and: stop at the first falsy; or: at the first truthy
                return result
        return result
    if isinstance(node, ast.UnaryOp):
        operand = _eval(node.operand, env)
        if operand is UNKNOWN:
            return UNKNOWN
        if isinstance(node.op, ast.Not):
            t = truth(operand)
            return UNKNOWN if t is UNKNOWN else not t
        return -operand if isinstance(node.op, ast.USub) else +operand
    if isinstance(node, ast.BinOp):
        left, right = _eval(node.left, env), _eval(node.right, env)
        if left is UNKNOWN or right is UNKNOWN or isinstance(left, (Dtype, EnumMember)) or \
                isinstance(right, (Dtype, EnumMember)):
            return UNKNOWN
        if not _result_fits(type(node.op), left, right):
            return UNKNOWN
        return _BINOPS[type(node.op)](left, right)
    if isinstance(node, ast.Compare):
        left = _eval(node.left, env)
        for op, comp in zip(node.ops, node.comparators):
            right = _eval(comp, env)
            if left is UNKNOWN or right is UNKNOWN:
                return UNKNOWN
            if isinstance(op, (ast.Is, ast.IsNot)):
                if isinstance(left, EnumMember) or isinstance(right, EnumMember):
                    same = left.same(right) if isinstance(left, EnumMember) else right.same(left)
                else:
                    same = left == right if isinstance(left, Dtype) and isinstance(right, Dtype) else left is right
                ok = same if isinstance(op, ast.Is) else not same
            else:
                if isinstance(right, (list, tuple, set)) and any(v is UNKNOWN for v in right):
                    return UNKNOWN
                t = truth(_CMPOPS[type(op)](left, right))
                if t is UNKNOWN:
                    return UNKNOWN
                ok = t
            if not ok:
                return False
            left = right
        return True
    if isinstance(node, ast.IfExp):
        t = truth(_eval(node.test, env))
        if t is UNKNOWN:
            return UNKNOWN
        return _eval(node.body if t else node.orelse, env)
    if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
        items = [_eval(e, env) for e in node.elts]
        if any(i is UNKNOWN for i in items):
            return UNKNOWN
        return {ast.Tuple: tuple, ast.List: list, ast.Set: set}[type(node)](items)
    if isinstance(node, ast.Call):
        name = node.func.id
        if name == "isinstance":
            value = _eval(node.args[0], env)
            if value is UNKNOWN or isinstance(value, (Dtype, EnumMember)):
                return UNKNOWN
            return isinstance(value, _type_arg(node.args[1]))
        args = [_eval(a, env) for a in node.args]
        if any(a is UNKNOWN or isinstance(a, (Dtype, EnumMember)) for a in args):
            return UNKNOWN
        fn = _FUNCTIONS.get(name) or _CURRENT.functions.get(name)
        return UNKNOWN if fn is None else fn(*args)
    return UNKNOWN


class _Every:
    def __contains__(self, _name) -> bool:
        return True


def render(message: str | None, env: dict, scope: str | None = None) -> str | None:
    """Megatron's message with its f-string fields filled in where they can be evaluated (``scope``: see
    ``evaluate``)."""
    if not message:
        return message
    try:
        node = _expr(message)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return message
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if not isinstance(node, ast.JoinedStr):
        return message
    return _within(Work(), _render_pieces, node, env, scope=scope)


def _render_pieces(node: ast.JoinedStr, env: dict) -> str:
    parts = []
    for piece in node.values:
        if isinstance(piece, ast.Constant):
            parts.append(str(piece.value))
            continue
        names = _Every() if _CURRENT.scope is not None else ()
        value = UNKNOWN if unsupported(piece.value, names=names) else _safe(piece.value, env)
        text = None if value is UNKNOWN else _text(value, piece.conversion == ord("r"))
        parts.append("{" + ast.unparse(piece.value) + "}" if text is None else text)
    return "".join(parts)


def _safe(node, env):
    try:
        return _eval(node, env)
    except Exception:  # rendering a message must never fail
        return UNKNOWN


def _text(value, as_repr: bool) -> str | None:
    """str() or repr() of a value that fits in a message, else None (left as its expression)."""
    if size(value) > MAX_VALUE_SIZE:
        return None
    try:
        return repr(value) if as_repr else str(value)
    except Exception:  # a user object's own __str__, an int past the str() digit limit
        return None


__all__ = ["Dtype", "EnumMember", "MAX_INT_BITS", "MAX_VALUE_SIZE", "MAX_WORK", "UNKNOWN", "Work", "evaluate", "local_key", "render",
           "size", "truth", "unsupported"]
