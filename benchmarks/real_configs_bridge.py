"""Megatron-Bridge recipes, harvested by running them symbolically with a small ``ast`` interpreter.

Each public recipe function is run over literal values, blocks and containers: ``cfg = _pretrain_common()`` is
followed into Bridge's own helpers (imports resolved inside the snapshot, deferred imports too),
``OptimizerConfig(...)``/``DistributedDataParallelConfig(...)``/``*ModelProvider(...)``/``MixedPrecisionConfig(...)``
calls become blocks, and ``cfg.model.x = v``/``cfg.optimizer.x = v``/``cfg.ddp.x = v`` set keys. Values are
evaluated only from literals, module constants, parameter defaults and call arguments, ``torch.<dtype>`` (recorded
as the string ``"torch.<dtype>"``: the project passes the dtype object), ``getattr`` of a known key, arithmetic and
comparisons; anything else is recorded as unevaluated and left out. A branch whose test cannot be evaluated is not
taken: the keys it sets are recorded as conditional and left out (also when set before: their final value is
unknown), and after an untaken branch that can return, every later key of that call is conditional too. A recipe's
``mixed_precision`` given by name ("bf16_mixed") is the block the function of that name in
``megatron.bridge.training.mixed_precision`` returns; a MixedPrecisionConfig block includes its class defaults
(Bridge writes every field of it over the other configs).
"""
from __future__ import annotations

import ast
import operator
import re

from benchmarks.real_configs_harvest import Block, Container, Ref, Snapshot, Unknown, _plain, record

BLOCK_KINDS = ("model", "optimizer", "ddp")
CONTAINER_ATTRS = BLOCK_KINDS + ("mixed_precision",)  # Bridge's MixedPrecisionConfig overwrites the other three
PRECISION_MODULE = "megatron.bridge.training.mixed_precision"
OPTIMIZER_CLASSES = {"OptimizerConfig", "MCoreOptimizerConfig", "AdamOptimizerConfig", "SGDOptimizerConfig"}
DDP_CLASSES = {"DistributedDataParallelConfig", "MCoreDistributedDataParallelConfig"}
MODEL_CLASSES = {"TransformerConfig", "MLATransformerConfig", "MCoreTransformerConfig"}
DTYPES = {"float32": "float32", "float": "float32", "bfloat16": "bfloat16", "float16": "float16", "half": "float16",
          "float64": "float64", "int64": "int64"}
_MAX_DEPTH = 8
_COMPARE = {ast.Eq: operator.eq, ast.NotEq: operator.ne, ast.Lt: operator.lt, ast.LtE: operator.le,
            ast.Gt: operator.gt, ast.GtE: operator.ge, ast.Is: operator.is_, ast.IsNot: operator.is_not,
            ast.In: lambda a, b: a in b, ast.NotIn: lambda a, b: a not in b}


def _block_kind(class_name: str) -> str | None:
    if class_name in OPTIMIZER_CLASSES:
        return "optimizer"
    if class_name in DDP_CLASSES:
        return "ddp"
    if class_name == "MixedPrecisionConfig":
        return "mixed_precision"
    if class_name in MODEL_CLASSES or class_name.endswith("ModelProvider") or re.search(r"ModelProvider\w*$",
                                                                                         class_name):
        return "model"
    return None


class _Return(Exception):
    def __init__(self, value):
        self.value = value


class Interpreter:
    """Runs project functions symbolically over literal values, blocks and containers (see the module doc)."""

    def __init__(self, snap: Snapshot, src_root: str = "src/"):
        self.snap, self.src_root = snap, src_root
        self.modules = {}
        for path in snap.paths:
            if path.startswith(src_root) and path.endswith(".py"):
                name = path[len(src_root):-3].replace("/", ".")
                self.modules[name.removesuffix(".__init__")] = path
        self._trees: dict[str, ast.Module] = {}
        self._constants: dict[str, dict] = {}
        self.stats = {"calls_followed": 0, "calls_not_followed": 0}

    # ---- modules and names
    def tree(self, path: str) -> ast.Module:
        if path not in self._trees:
            self._trees[path] = ast.parse(self.snap.read(path))
        return self._trees[path]

    def lookup(self, path: str, name: str, seen=frozenset()):
        """What ``name`` is at module level in ``path``: a function node, a class name, a constant, or Unknown."""
        if (path, name) in seen:
            return Unknown(name)
        seen = seen | {(path, name)}
        for node in self.tree(path).body:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name == name:
                return Ref("function", name, path, node)
            if isinstance(node, ast.ClassDef) and node.name == name:
                return Ref("class", name, path)
            if isinstance(node, ast.ImportFrom):
                found = self.imported(node, name, seen)
                if found is not None:
                    return found
        constants = self.constants(path)
        return constants.get(name, Unknown(name))

    def imported(self, node: ast.ImportFrom, name: str, seen=frozenset()):
        """What ``from M import name`` binds (None when this import does not bind ``name``)."""
        if not node.module or node.level:
            return None
        for alias in node.names:
            if (alias.asname or alias.name) == name:
                target = self.modules.get(node.module)
                if target is None:  # outside the snapshot (megatron.core, torch): the name is all we know
                    return Ref("class", alias.name) if alias.name[:1].isupper() else Unknown(name)
                return self.lookup(target, alias.name, seen | {("import", node.module, alias.name)})
        return None

    def constants(self, path: str) -> dict:
        if path not in self._constants:
            self._constants[path] = {}
            env = _Env(self, path, {})
            for node in self.tree(path).body:
                targets = node.targets if isinstance(node, ast.Assign) else (
                    [node.target] if isinstance(node, ast.AnnAssign) and node.value is not None else [])
                for t in targets:
                    if isinstance(t, ast.Name):
                        value = env.eval(node.value)
                        if not isinstance(value, Unknown):
                            self._constants[path][t.id] = value
        return self._constants[path]

    # ---- running functions
    def call(self, path: str, fn: ast.FunctionDef, args: list, kwargs: dict, depth: int):
        env = _Env(self, path, {}, depth)
        params = fn.args.posonlyargs + fn.args.args
        defaults = [None] * (len(params) - len(fn.args.defaults)) + list(fn.args.defaults)
        for i, (p, d) in enumerate(zip(params, defaults)):
            if i < len(args):
                env.vars[p.arg] = args[i]
            elif p.arg in kwargs:
                env.vars[p.arg] = kwargs[p.arg]
            else:
                env.vars[p.arg] = env.eval(d) if d is not None else Unknown(f"argument {p.arg}")
        for p, d in zip(fn.args.kwonlyargs, fn.args.kw_defaults):
            env.vars[p.arg] = kwargs.get(p.arg, env.eval(d) if d is not None else Unknown(f"argument {p.arg}"))
        try:
            env.run(fn.body)
        except _Return as ret:
            return ret.value
        return None


class _Env:
    def __init__(self, interp: Interpreter, path: str, vars: dict, depth: int = 0):
        self.interp, self.path, self.vars, self.depth = interp, path, vars, depth
        self.uncertain: str | None = None  # set after an untaken branch that may return

    def src(self, node) -> str:
        text = ast.unparse(node)
        return text if len(text) <= 160 else text[:157] + "..."

    # ---- statements
    def run(self, body: list, condition: str | None = None):
        for stmt in body:
            self.stmt(stmt, condition)

    def stmt(self, node, condition: str | None):
        cond = condition or self.uncertain
        if isinstance(node, ast.ImportFrom):  # a deferred import inside the function
            for alias in node.names:
                found = self.interp.imported(node, alias.asname or alias.name)
                if found is not None:
                    self.vars[alias.asname or alias.name] = found
            return
        if isinstance(node, ast.Return):
            if cond is None:
                raise _Return(self.eval(node.value) if node.value is not None else None)
            return
        if isinstance(node, (ast.Assign, ast.AnnAssign)):
            if node.value is None:
                return
            value = self.eval(node.value)
            for target in (node.targets if isinstance(node, ast.Assign) else [node.target]):
                self.assign(target, value, node, cond)
        elif isinstance(node, ast.Expr) and isinstance(node.value, ast.Call):
            if cond is None:
                self.eval(node.value)
            else:
                self.mark_calls(node.value, cond)
        elif isinstance(node, ast.If):
            test = self.eval(node.test) if cond is None else Unknown(cond)
            if isinstance(test, (Unknown, Block, Container)):
                why = cond or f"if {self.src(node.test)}"
                self.run(node.body, why)
                self.run(node.orelse, why)
                if cond is None and _may_leave(node):
                    self.uncertain = f"after `if {self.src(node.test)}` that may return"
            else:
                self.run(node.body if test else node.orelse, cond)
        elif isinstance(node, (ast.For, ast.While, ast.With, ast.Try)):
            why = cond or f"inside {type(node).__name__.lower()} at line {node.lineno}"
            for part in ("body", "orelse", "finalbody"):
                self.run(getattr(node, part, []) or [], why)
            for handler in getattr(node, "handlers", []) or []:
                self.run(handler.body, why)
            if cond is None and _may_leave(node):
                self.uncertain = f"after the {type(node).__name__.lower()} at line {node.lineno} that may return"

    def mark_calls(self, call: ast.Call, cond: str):
        """A call under a condition we did not take: blocks passed to it may be changed (noted, not run)."""
        for arg in call.args:
            value = self.eval(arg)
            if isinstance(value, (Block, Container)):
                _note(value, f"may be changed by `{self.src(call)}` ({cond}) at {self.path}:{call.lineno}")

    def assign(self, target, value, node, cond):
        if isinstance(target, ast.Name):
            if cond is None:
                self.vars[target.id] = value
            elif isinstance(value, (Block, Container)):
                self.vars[target.id] = value  # keep the object reachable; its keys stay as recorded
            return
        if isinstance(target, (ast.Tuple, ast.List)):
            items = value if isinstance(value, tuple) and len(value) == len(target.elts) else \
                [Unknown(self.src(node.value))] * len(target.elts)
            for t, v in zip(target.elts, items):
                self.assign(t, v, node, cond)
            return
        if not isinstance(target, ast.Attribute):
            return
        owner = self.eval(target.value)
        if isinstance(owner, Container) and target.attr in CONTAINER_ATTRS:
            if cond is not None:
                _note(owner, f"{target.attr} replaced under a condition ({cond}) at {self.path}:{node.lineno}")
                return
            owner.blocks[target.attr] = self.as_block(target.attr, value, node.value)
        elif isinstance(owner, Block):
            owner.set(target.attr, value, self.path, node.lineno, cond)

    # ---- expressions
    def eval(self, node):
        try:
            return self._eval(node)
        except (TypeError, ValueError, ZeroDivisionError, OverflowError, AttributeError, KeyError, IndexError):
            return Unknown(self.src(node))

    def _eval(self, node):
        if isinstance(node, ast.Constant):
            return node.value
        if isinstance(node, (ast.List, ast.Tuple, ast.Set)):
            items = [self.eval(e) for e in node.elts]
            if any(isinstance(e, ast.Starred) for e in node.elts):
                return Unknown(self.src(node))
            if any(isinstance(i, (Block, Container)) for i in items) and isinstance(node, ast.Tuple):
                return tuple(items)  # a multiple return such as (optimizer, scheduler)
            if any(isinstance(i, (Unknown, Block, Container)) for i in items):
                return Unknown(self.src(node))
            return tuple(items) if isinstance(node, ast.Tuple) else list(items)
        if isinstance(node, ast.Dict):
            if any(k is None for k in node.keys):
                return Unknown(self.src(node))
            out = {self.eval(k): self.eval(v) for k, v in zip(node.keys, node.values)}
            return Unknown(self.src(node)) if any(isinstance(x, Unknown) for x in [*out, *out.values()]) else out
        if isinstance(node, ast.Name):
            if node.id in self.vars:
                value = self.vars[node.id]
                return Unknown(node.id) if isinstance(value, Ref) else value
            value = self.interp.lookup(self.path, node.id)
            return value if not isinstance(value, Ref) else Unknown(node.id)
        if isinstance(node, ast.Attribute):
            if isinstance(node.value, ast.Name) and node.value.id == "torch" and node.attr in DTYPES:
                return f"torch.{DTYPES[node.attr]}"  # a torch dtype object, not a string, in the project
            owner = self.eval(node.value)
            if isinstance(owner, Container) and node.attr in CONTAINER_ATTRS:
                return owner.blocks.get(node.attr) or Unknown(self.src(node))
            if isinstance(owner, Block) and node.attr in owner.values:
                return owner.values[node.attr][0]
            return Unknown(self.src(node))
        if isinstance(node, ast.UnaryOp):
            v = self.eval(node.operand)
            if isinstance(v, Unknown):
                return v
            return {ast.USub: lambda x: -x, ast.UAdd: lambda x: +x, ast.Not: lambda x: not x,
                    ast.Invert: lambda x: ~x}[type(node.op)](v)
        if isinstance(node, ast.BinOp):
            a, b = self.eval(node.left), self.eval(node.right)
            if not all(isinstance(x, (int, float)) and not isinstance(x, bool) for x in (a, b)):
                return Unknown(self.src(node))
            ops = {ast.Add: lambda: a + b, ast.Sub: lambda: a - b, ast.Mult: lambda: a * b, ast.Div: lambda: a / b,
                   ast.FloorDiv: lambda: a // b, ast.Mod: lambda: a % b, ast.Pow: lambda: a ** b}
            return ops[type(node.op)]() if type(node.op) in ops else Unknown(self.src(node))
        if isinstance(node, ast.Compare):
            left = self.eval(node.left)
            for op, right_node in zip(node.ops, node.comparators):
                right = self.eval(right_node)
                if any(isinstance(x, (Unknown, Block, Container)) for x in (left, right)):
                    return Unknown(self.src(node))
                ok = _COMPARE[type(op)](left, right)
                if not ok:
                    return False
                left = right
            return True
        if isinstance(node, ast.BoolOp):
            values = [self.eval(v) for v in node.values]
            if any(isinstance(v, Unknown) for v in values):
                return Unknown(self.src(node))
            return all(values) if isinstance(node.op, ast.And) else any(values)
        if isinstance(node, ast.IfExp):
            test = self.eval(node.test)
            if isinstance(test, (Unknown, Block, Container)):
                return Unknown(self.src(node))
            return self.eval(node.body if test else node.orelse)
        if isinstance(node, ast.Call):
            return self.call(node)
        return Unknown(self.src(node))

    def call(self, node: ast.Call):
        if any(isinstance(a, ast.Starred) for a in node.args) or any(k.arg is None for k in node.keywords):
            self.interp.stats["calls_not_followed"] += 1
            return Unknown(self.src(node))
        name = node.func.id if isinstance(node.func, ast.Name) else None
        if name == "getattr" and len(node.args) in (2, 3) and not node.keywords:
            owner, attr = self.eval(node.args[0]), self.eval(node.args[1])
            if isinstance(owner, Block) and isinstance(attr, str) and attr in owner.values:
                return owner.values[attr][0]
            return Unknown(self.src(node))
        if name in ("float", "int", "bool", "str") and len(node.args) == 1 and not node.keywords:
            v = self.eval(node.args[0])
            return Unknown(self.src(node)) if isinstance(v, (Unknown, Block, Container)) else \
                {"float": float, "int": int, "bool": bool, "str": str}[name](v)
        target = None
        if name:
            target = self.vars[name] if name in self.vars else self.interp.lookup(self.path, name)
        if isinstance(target, Ref) and target.kind == "class":
            return self.construct(target.name, node, target.path)
        if isinstance(target, Ref) and target.kind == "function" and self.depth < _MAX_DEPTH:
            self.interp.stats["calls_followed"] += 1
            args = [self.eval(a) for a in node.args]
            kwargs = {k.arg: self.eval(k.value) for k in node.keywords}
            return self.interp.call(target.path, target.node, args, kwargs, self.depth + 1)
        self.interp.stats["calls_not_followed"] += 1
        for arg in [*node.args, *(k.value for k in node.keywords)]:  # blocks handed to code we do not follow
            value = self.eval(arg)
            if isinstance(value, (Block, Container)):
                _note(value, f"passed to `{self.src(node)}` at {self.path}:{node.lineno} (not followed)")
        return Unknown(self.src(node))

    def as_block(self, kind: str, value, node) -> Block:
        """What a container attribute holds: a block, a named mixed-precision recipe, or an unknown base."""
        if isinstance(value, Block):
            return value
        if kind == "mixed_precision" and isinstance(value, str):
            path = self.interp.modules.get(PRECISION_MODULE)
            found = self.interp.lookup(path, value) if path else None
            if isinstance(found, Ref) and found.kind == "function":
                block = self.interp.call(found.path, found.node, [], {}, self.depth + 1)
                if isinstance(block, Block):
                    block.base = f"{value!r} ({found.path}:{found.node.lineno})"
                    return block
        return Block(kind, "?", self.path, node.lineno, base=self.src(node))

    def construct(self, class_name: str, node: ast.Call, class_path: str | None = None):
        if class_name == "ConfigContainer":
            box = Container()
            for k in node.keywords:
                if k.arg in CONTAINER_ATTRS:
                    box.blocks[k.arg] = self.as_block(k.arg, self.eval(k.value), k.value)
            return box
        kind = _block_kind(class_name)
        if kind is None:
            return Unknown(self.src(node))
        block = Block(kind, class_name, self.path, node.lineno)
        if kind == "mixed_precision" and class_path:  # Bridge writes every field over the configs, defaults too
            for name, (value, line) in class_defaults(self.interp.tree(class_path), class_name).items():
                block.set(name, value, class_path, line)
        if node.args:
            block.notes.append(f"{len(node.args)} positional argument(s) not harvested")
        for k in node.keywords:
            block.set(k.arg, self.eval(k.value), self.path, k.value.lineno)
        return block


def _may_leave(node) -> bool:
    return any(isinstance(n, (ast.Return, ast.Raise)) for n in ast.walk(node))


def _note(obj, text: str):
    if isinstance(obj, Container):
        for b in obj.blocks.values():
            _note(b, text)
    elif isinstance(obj, Block) and text not in obj.notes:
        obj.notes.append(text)


def harvest_bridge(snap: Snapshot, roots=("src/megatron/bridge/recipes/", "src/megatron/bridge/perf_recipes/")):
    """Every public recipe function that returns a ConfigContainer (or a model provider): its three blocks."""
    interp = Interpreter(snap)
    out = []
    for path in sorted(p for p in snap.paths if p.endswith(".py") and p.startswith(roots)
                       and not p.endswith("__init__.py")):
        for fn in interp.tree(path).body:
            if not isinstance(fn, ast.FunctionDef) or fn.name.startswith("_"):
                continue
            try:
                result = interp.call(path, fn, [], {}, 0)
            except RecursionError:
                interp.stats["functions_failed"] = interp.stats.get("functions_failed", 0) + 1
                continue
            site = f"{path}::{fn.name}"
            if isinstance(result, Container):
                for kind in CONTAINER_ATTRS:
                    block = result.blocks.get(kind)
                    if block is not None:
                        out.append(record(snap.project, snap.commit, site, block))
            elif isinstance(result, Block):
                out.append(record(snap.project, snap.commit, site, result))
    return out, interp.stats


def bridge_wrapper_defaults(snap: Snapshot) -> list[dict]:
    """Class-level defaults of Bridge's own subclasses of the Megatron configs (model providers, Optimizer/DDP
    configs): what a user gets from Bridge without setting the field."""
    out = []
    for path in snap.paths:
        if not (path.startswith("src/megatron/bridge/") and path.endswith(".py")):
            continue
        text = snap.read(path)
        if "Provider" not in text and "Config(" not in text:
            continue
        tree = ast.parse(text)
        for cls in tree.body:
            if not isinstance(cls, ast.ClassDef):
                continue
            bases = [ast.unparse(b) for b in cls.bases]
            if not (cls.name.endswith("ModelProvider") or re.search(r"ModelProvider\w*$", cls.name)
                    or any(b.split(".")[-1] in (MODEL_CLASSES | OPTIMIZER_CLASSES | DDP_CLASSES) for b in bases)):
                continue
            env = _Env(_ConstOnly(), path, {})
            values = {}
            for node in cls.body:
                if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and node.value is not None:
                    v = env.eval(node.value)
                    if not isinstance(v, Unknown):
                        values[node.target.id] = {"value": _plain(v), "line": node.lineno}
            if values:
                out.append({"project": snap.project, "commit": snap.commit, "file": path, "line": cls.lineno,
                            "class": cls.name, "bases": bases, "defaults": values})
    return out


def class_defaults(tree: ast.Module, class_name: str) -> dict:
    """name -> (value, line) of the literal class-level defaults of ``class_name`` in ``tree``."""
    env = _Env(_ConstOnly(), "", {})
    for cls in tree.body:
        if isinstance(cls, ast.ClassDef) and cls.name == class_name:
            out = {}
            for node in cls.body:
                if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and node.value is not None:
                    value = env.eval(node.value)
                    if not isinstance(value, (Unknown, Block, Container)):
                        out[node.target.id] = (value, node.lineno)
            return out
    return {}


class _ConstOnly:
    """Name lookups for class bodies: nothing resolves (only literals and torch dtypes are evaluated)."""
    stats = {"calls_followed": 0, "calls_not_followed": 0}

    def lookup(self, path, name):
        return Unknown(name)


__all__ = ["CONTAINER_ATTRS", "Interpreter", "bridge_wrapper_defaults", "class_defaults", "harvest_bridge"]
