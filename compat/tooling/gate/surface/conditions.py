# SPDX-License-Identifier: Apache-2.0
"""Keywords the candidate passes only under a condition: ``kw["pp_layer_offset"] = x`` under
``if pp_layer_offset is not None:``, or ``f(vp_stage=i)`` in one branch and ``f()`` in the other.

A condition is the text of an ``if`` test (``ast.unparse``, cut to a width), prefixed by ``NOT`` for the ``else``
branch; a path is the tuple of conditions from the function's body down to a node, and a keyword's
alternatives are the paths under which it is passed (``()``: always). Only what differs between calls of one
callee in one function counts: a condition around every such call is the caller's business, not the keyword's.

In the model a call shape stays ``N|kw,kw`` (see model.py); a shape with conditions gets ``\\t`` and the JSON
``{"": call path, kw: [path, ...]}`` appended (``encode_shape``/``decode_shape``).
"""
from __future__ import annotations

import ast
import json

from ...ast_tools import child_nodes

NOT = "!"
_WIDTH = 80
_CALL = ""  # the key of the call's own path in an encoded shape


def branch_paths(function) -> dict[int, tuple]:
    """id(node) -> its path, for every call, assignment and keyword under ``function`` (nested defs included:
    they run, if at all, inside it)."""
    paths: dict[int, tuple] = {}
    stack = [(child, ()) for child in child_nodes(function)]
    while stack:
        node, path = stack.pop()
        if isinstance(node, (ast.Call, ast.Assign, ast.keyword)):
            paths[id(node)] = path
        if isinstance(node, ast.If):
            text = condition_text(node.test)
            stack.append((node.test, path))
            stack += [(child, path + (text,)) for child in node.body]
            stack += [(child, path + (NOT + text,)) for child in node.orelse]
            continue
        stack += [(child, path) for child in child_nodes(node)]
    return paths


def condition_text(test) -> str:
    text = " ".join(ast.unparse(test).split())
    return text if len(text) <= _WIDTH else text[:_WIDTH - 3] + "..."


def negated(condition: str) -> str:
    return condition[len(NOT):] if condition.startswith(NOT) else NOT + condition


def beyond(path: tuple, context: tuple) -> tuple:
    """The conditions of ``path`` that ``context`` (what holds wherever the call is made) does not already hold."""
    return tuple(c for c in path if c not in context)


def common(paths: list) -> tuple:
    """The conditions every path holds (in the first path's order)."""
    return tuple(c for c in paths[0] if all(c in p for p in paths[1:])) if paths else ()


def simplify(alternatives) -> list[tuple]:
    """The alternatives with ``if c``/``else`` pairs of one test merged (``[(a,), (!a,)]`` -> ``[()]``); ``[()]``
    when one of them is always true."""
    alts = set(alternatives)
    merged = True
    while merged and () not in alts:
        merged = False
        for path in sorted(alts):
            twin = path[:-1] + (negated(path[-1]),)
            if twin in alts:
                alts -= {path, twin}
                alts.add(path[:-1])
                merged = True
                break
    return [()] if () in alts else sorted(alts, key=lambda p: (len(p), p))


def always(alternatives) -> bool:
    return simplify(alternatives) == [()]


def describe(alternatives) -> str:
    """``a and not (b)``, or ``a or c`` for several alternatives."""
    def one(path: tuple) -> str:
        return " and ".join(f"not ({c[len(NOT):]})" if c.startswith(NOT) else c for c in path)
    return " or ".join(one(p) for p in simplify(alternatives))


def encode_shape(count: int, keywords: list, call_path: tuple = (), keyword_paths: dict | None = None) -> str:
    """``N|kw,kw``, with the conditions appended when there are any (``keyword_paths``: kw -> [path, ...], only
    for the keywords whose alternatives are not always true)."""
    base = f"{count}|{','.join(keywords)}"
    extra = {k: [list(p) for p in simplify(v)] for k, v in (keyword_paths or {}).items() if not always(v)}
    if call_path:
        extra[_CALL] = list(call_path)
    return f"{base}\t{json.dumps(extra, sort_keys=True)}" if extra else base


def decode_shape(shape: str) -> tuple[int, list, dict]:
    """(positional count, keywords, kw -> alternatives under which it is passed), for ``encode_shape``'s text;
    the call's own path is folded into every keyword's alternatives, and is the entry ``""``."""
    head, _, extra = shape.partition("\t")
    count_text, _, kws = head.partition("|")
    keywords = [k for k in kws.split(",") if k]
    data = json.loads(extra) if extra else {}
    call_path = tuple(data.get(_CALL, ()))
    paths = {k: [call_path + tuple(p) for p in data.get(k, [[]])] for k in keywords}
    paths[_CALL] = [call_path]
    return int(count_text), keywords, paths


def plain_call(call: ast.Call) -> tuple[int, list] | None:
    """(positional count, keywords) of a call; None when a ``*``/``**`` splat makes its shape unknown."""
    if any(isinstance(a, ast.Starred) for a in call.args) or any(k.arg is None for k in call.keywords):
        return None
    return len(call.args), [k.arg for k in call.keywords]


def shapes_of(function, sites: list) -> list[str]:
    """The shapes of the calls of one callee under ``function``; ``sites``: (call, positional count, keywords,
    origins) with origins: keyword -> the statements that add it to a ``**`` dict (model.py), else empty. A shape
    carries the conditions that set it apart from the other calls; the function is walked for them only when
    the calls differ or a dict's keys come from statements."""
    if not any(origins for *_, origins in sites) and len({(n, tuple(k)) for _, n, k, _ in sites}) < 2:
        return list(dict.fromkeys(encode_shape(n, k) for _, n, k, _ in sites))
    paths = branch_paths(function)
    context = common([paths.get(id(call), ()) for call, *_ in sites])
    out: list[str] = []
    for call, count, keywords, origins in sites:
        where = paths.get(id(call), ())
        keyword_paths = {k: [beyond(paths.get(id(s), ()), where) for s in statements]
                         for k, statements in origins.items()}
        text = encode_shape(count, keywords, beyond(where, context), keyword_paths)
        if text not in out:
            out.append(text)
    return out
