"""Megatron-LM's own unit tests as labels: every config constructor call in ``tests/unit_tests`` whose keyword
arguments can be evaluated statically, with the test's expectation (inside ``pytest.raises`` or not).

Facts only, with provenance (tag, file, line): the class, the kwargs (as data) and the expectation. Values:
literals, module and function-level constants, ``torch.<dtype>``, ``<Enum>.<member>``, ``-x``, and the values a
``@pytest.mark.parametrize`` gives a name (one case per combination, at most ``MAX_COMBINATIONS``). A call with
positional arguments, ``**kwargs`` or a value we cannot evaluate is counted as skipped, never guessed.

The split was fixed before any case was looked at: ``DEV_TAGS`` (studied) and ``EVAL_TAGS`` (not tuned on).

Usage: ``python -m benchmarks.megatron_test_labels [--git-dir DIR] [--out PATH]`` (DIR: a Megatron-LM mirror,
from the ``fetch`` tool or ``git clone --bare``).
"""
from __future__ import annotations

import argparse
import ast
import json
import math
import subprocess
import sys
from pathlib import Path

from tools.git_snapshots import mirror_root

CLASSES = {"TransformerConfig": "transformer", "MLATransformerConfig": "mla", "ModelParallelConfig": "model_parallel",
           "OptimizerConfig": "optimizer", "AdamOptimizerConfig": "adam_optimizer",
           "SGDOptimizerConfig": "sgd_optimizer", "DistributedDataParallelConfig": "ddp"}
DEV_TAGS = ("core_v0.16.1",)
EVAL_TAGS = ("core_v0.13.1", "core_v0.18.2", "core_v0.19.0")
MAX_COMBINATIONS = 64
DTYPES = {"bfloat16", "float16", "float32", "half", "float", "bfloat", "float64", "uint8", "int8"}
OUT = Path(__file__).resolve().parents[1] / "tests" / "contract" / "data" / "megatron_test_labels.json"
_NO = object()


class _Mark(dict):
    """A torch dtype or an Enum member, kept as its one-key JSON object."""


def _git(git_dir: str, *args: str) -> str:
    return subprocess.run(["git", "--git-dir", git_dir, *args], check=True, capture_output=True, text=True).stdout


def encode(value):
    """JSON for a value: tuples, dtypes and Enum members as one-key objects."""
    if isinstance(value, tuple):
        return {"__tuple__": [encode(v) for v in value]}
    if isinstance(value, list):
        return [encode(v) for v in value]
    if isinstance(value, _Mark):
        return dict(value)
    if isinstance(value, dict):
        return {"__dict__": [[encode(k), encode(v)] for k, v in value.items()]}
    return value


class _Evaluator:
    """Constant values of names: module level, then the enclosing function's simple assignments before the call."""

    def __init__(self, tree: ast.Module):
        self.module = self._bindings(tree.body)

    def _bindings(self, body) -> dict:
        out = {}
        for node in body:
            if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
                value = self.value(node.value, out)
                if value is not _NO:
                    out[node.targets[0].id] = value
                else:
                    out.pop(node.targets[0].id, None)
        return out

    def value(self, node: ast.expr, names: dict):
        if isinstance(node, ast.Constant):
            if isinstance(node.value, float) and not math.isfinite(node.value):
                return _NO
            return node.value if isinstance(node.value, (bool, int, float, str, type(None))) else _NO
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
            v = self.value(node.operand, names)
            return -v if isinstance(v, (int, float)) and not isinstance(v, bool) else _NO
        if isinstance(node, (ast.List, ast.Tuple)):
            items = [self.value(e, names) for e in node.elts]
            if any(i is _NO for i in items):
                return _NO
            return tuple(items) if isinstance(node, ast.Tuple) else items
        if isinstance(node, ast.Dict):
            if any(k is None for k in node.keys):
                return _NO
            keys = [self.value(k, names) for k in node.keys]
            values = [self.value(v, names) for v in node.values]
            if any(x is _NO for x in keys + values) or any(isinstance(k, (list, dict)) for k in keys):
                return _NO
            return dict(zip(keys, values))
        if isinstance(node, ast.Name):
            return names.get(node.id, _NO)
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
            if node.value.id == "torch" and node.attr in DTYPES:
                return _Mark(__dtype__=node.attr)
            if node.value.id[:1].isupper():
                return _Mark(__enum__=f"{node.value.id}.{node.attr}")
        return _NO


def _parents(tree) -> dict:
    return {c: p for p in ast.walk(tree) for c in ast.iter_child_nodes(p)}


def _raises_ctx(item: ast.withitem) -> str | None:
    """'raises' for ``pytest.raises(...)``, 'conditional' for an expression that may be one (``ctx`` names)."""
    expr = item.context_expr
    if isinstance(expr, ast.Call) and ast.unparse(expr.func).endswith("raises"):
        return "raises"
    if isinstance(expr, ast.Call) and ast.unparse(expr.func).endswith(("warns", "deprecated_call")):
        return None
    if isinstance(expr, (ast.Name, ast.IfExp, ast.Attribute)) and not ast.unparse(expr).startswith("torch"):
        return "conditional"
    return None


def _expectation(call: ast.Call, parents: dict) -> str:
    node = call
    while (node := parents.get(node)) is not None:
        if isinstance(node, (ast.With, ast.AsyncWith)):
            kinds = {_raises_ctx(i) for i in node.items}
            if "raises" in kinds:
                return "raises"
            if "conditional" in kinds:
                return "conditional"
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            return "ok"
    return "ok"


def _parametrize(fn: ast.AST, ev: _Evaluator, names: dict) -> list[dict]:
    """The combinations of ``@pytest.mark.parametrize`` values of a test function ([{}] when none)."""
    axes = []
    for dec in getattr(fn, "decorator_list", ()):
        if not (isinstance(dec, ast.Call) and ast.unparse(dec.func).endswith("parametrize") and len(dec.args) >= 2):
            continue
        argnames = ev.value(dec.args[0], names)
        values = ev.value(dec.args[1], names)
        if isinstance(argnames, str):
            argnames = [a.strip() for a in argnames.split(",") if a.strip()]
        if not isinstance(argnames, (list, tuple)) or not isinstance(values, (list, tuple)):
            axes.append(None)  # unreadable: names it binds stay unknown
            continue
        rows = []
        for v in values:
            if len(argnames) == 1:
                rows.append({argnames[0]: v})
            elif isinstance(v, (list, tuple)) and len(v) == len(argnames):
                rows.append(dict(zip(argnames, v)))
        axes.append(rows)
    combos = [{}]
    for rows in axes:
        if rows is None:
            continue
        combos = [{**c, **r} for c in combos for r in rows]
        if len(combos) > MAX_COMBINATIONS:
            return combos[:MAX_COMBINATIONS]
    return combos


def calls_in(source: str, tag: str, path: str) -> tuple[list[dict], int]:
    """(cases, calls skipped) of one test file."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return [], 0
    ev, parents = _Evaluator(tree), _parents(tree)
    cases, skipped = [], 0
    for call in ast.walk(tree):
        if not isinstance(call, ast.Call):
            continue
        cls = ast.unparse(call.func).rsplit(".", 1)[-1]
        if cls not in CLASSES:
            continue
        fn = call
        while (fn := parents.get(fn)) is not None and not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
            pass
        local = dict(ev.module)
        if fn is not None:
            local.update(ev._bindings([n for n in ast.walk(fn) if isinstance(n, ast.Assign)
                                       and n.lineno < call.lineno]))
        if call.args or any(k.arg is None for k in call.keywords):
            skipped += 1
            continue
        produced = False
        seen = set()
        for combo in _parametrize(fn, ev, local) if fn is not None else [{}]:
            names = {**local, **combo}
            kwargs = {k.arg: ev.value(k.value, names) for k in call.keywords}
            if any(v is _NO for v in kwargs.values()):
                continue
            encoded = {k: encode(v) for k, v in kwargs.items()}
            key = json.dumps(encoded, sort_keys=True)
            if key in seen:
                continue
            seen.add(key)
            produced = True
            cases.append({"tag": tag, "file": path, "line": call.lineno, "class": cls, "config": CLASSES[cls],
                          "expect": _expectation(call, parents), "kwargs": encoded})
        skipped += not produced
    return cases, skipped


def labels(git_dir: str, tags=DEV_TAGS + EVAL_TAGS) -> dict:
    out, counts = [], {}
    for tag in tags:
        files = [f for f in _git(git_dir, "ls-tree", "-r", "--name-only", tag, "tests/unit_tests").splitlines()
                 if f.endswith(".py")]
        n_cases, n_skipped = 0, 0
        for path in files:
            source = _git(git_dir, "show", f"{tag}:{path}")
            if not any(c + "(" in source for c in CLASSES):
                continue
            cases, skipped = calls_in(source, tag, path)
            out += cases
            n_cases, n_skipped = n_cases + len(cases), n_skipped + skipped
        counts[tag] = {"commit": _git(git_dir, "rev-list", "-n", "1", tag).strip(), "cases": n_cases,
                       "calls_skipped": n_skipped, "set": "dev" if tag in DEV_TAGS else "eval"}
    return {"format": 1, "source": "Megatron-LM tests/unit_tests, extracted with ast by "
                                   "benchmarks/megatron_test_labels.py (facts: class, kwargs, expectation)",
            "tags": counts, "cases": out}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--git-dir", default=None,
                    help="a Megatron-LM git directory (default: NVIDIA+Megatron-LM/repo under $MCORE_COMPAT_MIRROR)")
    ap.add_argument("--out", type=Path, default=OUT)
    args = ap.parse_args(argv)
    data = labels(args.git_dir or str(mirror_root(None) / "NVIDIA+Megatron-LM" / "repo"))
    args.out.parent.mkdir(parents=True, exist_ok=True)
    body = ",\n".join("  " + json.dumps(c, sort_keys=True) for c in data["cases"])
    head = json.dumps({k: v for k, v in data.items() if k != "cases"}, indent=1)
    args.out.write_text(head[:-2] + ',\n "cases": [\n' + body + "\n ]\n}\n", encoding="utf-8")
    for tag, c in data["tags"].items():
        print(f"{tag} ({c['set']}): {c['cases']} cases, {c['calls_skipped']} calls skipped", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
