"""Harvest Megatron config blocks (optimizer, DDP, model) from fetched snapshots of real projects, statically.

Nothing of a project is imported or run. Snapshots are git directories (``fetch`` writes ``MIRROR/<owner>+<name>/repo``),
read with ``git cat-file``. Three readers:

- Megatron-Bridge recipes (Python): a small ``ast`` interpreter runs each public recipe function symbolically:
  ``cfg = _pretrain_common()`` is followed into the project's own helpers (imports resolved inside the snapshot),
  ``OptimizerConfig(...)``/``DistributedDataParallelConfig(...)``/``*ModelProvider(...)`` calls become blocks, and
  ``cfg.model.x = v``/``cfg.optimizer.x = v``/``cfg.ddp.x = v`` set keys. Values are evaluated only from literals,
  module constants, parameter defaults and call arguments, ``torch.<dtype>``, arithmetic and comparisons; anything
  else is recorded as unevaluated and left out. A branch whose test cannot be evaluated is not taken: the keys it
  sets are recorded as conditional and left out (also when set before: their final value is unknown), and after an
  untaken branch that can return, every later key of that call is conditional too.
- NeMo-RL YAML (``examples/configs``): ``defaults:`` inheritance and ``${a.b}`` interpolation as NeMo-RL's loader
  does them, scalars typed as OmegaConf types them (``1e-8`` is a float there, a string for plain PyYAML); every
  ``megatron_cfg`` mapping gives an optimizer block, a DDP block and a model block (its scalar keys plus
  ``model_overrides``).
- verl: ``override_transformer_config``/``override_ddp_config``/``override_optimizer_config`` in its YAML defaults,
  and the Hydra overrides of those in its shell scripts (merged over the YAML defaults, as verl does).
"""
from __future__ import annotations

import ast
import copy
import re
import shlex
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

import yaml

BLOCK_KINDS = ("model", "optimizer", "ddp")
CONTAINER_ATTRS = BLOCK_KINDS + ("mixed_precision",)  # Bridge's MixedPrecisionConfig overwrites the other three
PRECISION_MODULE = "megatron.bridge.training.mixed_precision"
OPTIMIZER_CLASSES = {"OptimizerConfig", "MCoreOptimizerConfig", "AdamOptimizerConfig", "SGDOptimizerConfig"}
DDP_CLASSES = {"DistributedDataParallelConfig", "MCoreDistributedDataParallelConfig"}
MODEL_CLASSES = {"TransformerConfig", "MLATransformerConfig", "MCoreTransformerConfig"}
DTYPES = {"float32": "float32", "float": "float32", "bfloat16": "bfloat16", "float16": "float16", "half": "float16",
          "float64": "float64", "int64": "int64"}
_MAX_DEPTH = 8


# ------------------------------------------------------------------------------------------------ git snapshots
class Snapshot:
    """One fetched repository: its HEAD commit, file list and file texts (``git cat-file --batch``)."""

    def __init__(self, git_dir: Path, project: str):
        self.git_dir, self.project = Path(git_dir), project
        self.commit = self._git("rev-parse", "HEAD").strip()
        self.paths = self._git("ls-tree", "-r", "--name-only", "HEAD").splitlines()
        self._texts: dict[str, str] = {}

    def _git(self, *args: str) -> str:
        return subprocess.run(["git", "--git-dir", str(self.git_dir), *args], check=True, capture_output=True,
                              text=True).stdout

    def read(self, path: str) -> str:
        if path not in self._texts:
            self._texts[path] = self._git("show", f"{self.commit}:{path}")
        return self._texts[path]


# ------------------------------------------------------------------------------------------------ harvested data
@dataclass
class Unknown:
    src: str


@dataclass(frozen=True)
class Ref:
    """A module-level function or class of the project (or a class imported from outside it)."""
    kind: str  # "function" or "class"
    name: str
    path: str | None = None
    node: object = None


@dataclass
class Block:
    kind: str  # model / optimizer / ddp
    cls: str  # the class as the project names it
    file: str
    line: int
    values: dict = field(default_factory=dict)  # key -> (value, file, line)
    unevaluated: dict = field(default_factory=dict)  # key -> (source text, file, line)
    conditional: dict = field(default_factory=dict)  # key -> (condition, file, line)
    base: str | None = None  # where the keys nobody set come from, when not the class defaults (HF, a call)
    notes: list = field(default_factory=list)

    def set(self, key: str, value, file: str, line: int, condition: str | None = None):
        if condition is not None:  # its final value is unknown: left out, even if set before
            self.values.pop(key, None)
            self.unevaluated.pop(key, None)
            self.conditional[key] = (condition, file, line)
        elif isinstance(value, (Unknown, Block, Container)):
            self.values.pop(key, None)
            self.unevaluated[key] = (value.src if isinstance(value, Unknown) else type(value).__name__, file, line)
        else:
            self.unevaluated.pop(key, None)
            self.values[key] = (value, file, line)


@dataclass
class Container:
    blocks: dict = field(default_factory=dict)  # model/optimizer/ddp -> Block


def record(project: str, commit: str, site: str, block: Block) -> dict:
    """The JSON record of one harvested config."""
    return {"project": project, "commit": commit, "site": site, "kind": block.kind, "class": block.cls,
            "file": block.file, "line": block.line, "base": block.base,
            "values": {k: _plain(v) for k, (v, _f, _l) in sorted(block.values.items())},
            "where": {k: f"{f}:{ln}" for k, (_v, f, ln) in sorted(block.values.items())},
            "unevaluated": {k: {"src": s, "where": f"{f}:{ln}"} for k, (s, f, ln) in sorted(block.unevaluated.items())},
            "conditional": {k: {"when": c, "where": f"{f}:{ln}"} for k, (c, f, ln) in sorted(block.conditional.items())},
            "notes": list(block.notes)}


def _plain(value):
    if isinstance(value, tuple):
        return [_plain(v) for v in value]
    if isinstance(value, list):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    return value


# ------------------------------------------------------------------------------------------------ Bridge (ast)
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
                return DTYPES[node.attr]
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
                ok = {ast.Eq: lambda: left == right, ast.NotEq: lambda: left != right, ast.Lt: lambda: left < right,
                      ast.LtE: lambda: left <= right, ast.Gt: lambda: left > right, ast.GtE: lambda: left >= right,
                      ast.Is: lambda: left is right, ast.IsNot: lambda: left is not right,
                      ast.In: lambda: left in right, ast.NotIn: lambda: left not in right}[type(op)]()
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


# ------------------------------------------------------------------------------------------------ YAML (OmegaConf-like)
class OmegaLikeLoader(yaml.SafeLoader):
    """PyYAML's SafeLoader with OmegaConf's scalar typing: floats without a dot (1e-8) are floats, timestamps are
    strings (omegaconf/_utils.py get_yaml_loader)."""


OmegaLikeLoader.add_implicit_resolver(
    "tag:yaml.org,2002:float",
    re.compile(r"""^(?:[-+]?(?:[0-9][0-9_]*)\.[0-9_]*(?:[eE][-+]?[0-9]+)?
                  |[-+]?(?:[0-9][0-9_]*)(?:[eE][-+]?[0-9]+)
                  |\.[0-9_]+(?:[eE][-+][0-9]+)?
                  |[-+]?[0-9][0-9_]*(?::[0-5]?[0-9])+\.[0-9_]*
                  |[-+]?\.(?:inf|Inf|INF)
                  |\.(?:nan|NaN|NAN))$""", re.X),
    list("-+0123456789."))
OmegaLikeLoader.yaml_implicit_resolvers = {
    k: [(tag, rx) for tag, rx in v if tag != "tag:yaml.org,2002:timestamp"]
    for k, v in OmegaLikeLoader.yaml_implicit_resolvers.items()}


@dataclass
class Leaf:
    value: object
    file: str
    line: int
    plain_yaml: object = None  # what yaml.safe_load alone makes of the same scalar, when it differs


def load_yaml_leaves(text: str, file: str):
    """A YAML document as nested dicts whose leaves carry (value, file, line)."""
    loader = OmegaLikeLoader(text)
    try:
        node = loader.get_single_node()
    finally:
        loader.dispose()

    def conv(n):
        if isinstance(n, yaml.MappingNode):
            loader.flatten_mapping(n)  # YAML merge keys (<<: *anchor)
            return {loader.construct_object(k, deep=True): conv(v) for k, v in n.value}
        value = loader.construct_object(n, deep=True)
        leaf = Leaf(value, file, n.start_mark.line + 1)
        if isinstance(n, yaml.ScalarNode) and n.style is None:
            try:
                other = yaml.safe_load(n.value)  # the same plain scalar, typed by PyYAML alone
            except yaml.YAMLError:
                other = value
            if type(other) is not type(value):
                leaf.plain_yaml = other
        return leaf

    return conv(node) if node is not None else {}


def _merge(base, over):
    if isinstance(base, dict) and isinstance(over, dict):
        if isinstance(over.get("_override_"), Leaf) and over["_override_"].value:
            return {k: v for k, v in over.items() if k != "_override_"}
        out = dict(base)
        for k, v in over.items():
            out[k] = _merge(base.get(k), v) if k in base else v
        return out
    return over


def load_with_defaults(snap: Snapshot, path: str, depth: int = 0):
    """NeMo-RL's load_config_with_inheritance: parents from ``defaults:`` merged under the file."""
    tree = load_yaml_leaves(snap.read(path), path)
    if not isinstance(tree, dict):
        return {}
    parents = tree.pop("defaults", None)
    if parents is None or depth > 8:
        return tree
    names = parents.value if isinstance(parents, Leaf) else []
    names = [names] if isinstance(names, str) else list(names or [])
    base: dict = {}
    for name in names:
        parent = str(Path(path).parent / str(name))
        parent = _normpath(parent)
        if parent in snap.paths:
            base = _merge(base, load_with_defaults(snap, parent, depth + 1))
    return _merge(base, tree)


def _normpath(path: str) -> str:
    parts: list[str] = []
    for p in path.split("/"):
        if p == "..":
            parts.pop()
        elif p not in ("", "."):
            parts.append(p)
    return "/".join(parts)


_INTERP = re.compile(r"^\$\{([A-Za-z_][\w.]*)\}$")


def resolve_interpolations(tree: dict):
    """Replace leaves that are exactly ``${a.b.c}`` with the value they point at; others with ${ stay Unknown."""
    def get(path: str):
        node = tree
        for part in path.split("."):
            if not isinstance(node, dict) or part not in node:
                return None
            node = node[part]
        return node

    def walk(node, depth=0):
        if isinstance(node, dict):
            return {k: walk(v, depth) for k, v in node.items()}
        if isinstance(node.value, str) and "${" in node.value:
            m = _INTERP.match(node.value)
            target = get(m.group(1)) if m else None
            if isinstance(target, Leaf) and depth < 8:
                return Leaf(walk(target, depth + 1).value, node.file, node.line)
            return Leaf(Unknown(node.value), node.file, node.line)
        return node

    return walk(tree)


def _block_from_leaves(kind: str, cls: str, mapping: dict, file: str, line: int, yaml_notes: list) -> Block:
    block = Block(kind, cls, file, line)
    for key, leaf in mapping.items():
        if isinstance(leaf, dict):
            continue
        block.set(str(key), leaf.value, leaf.file, leaf.line)
        if leaf.plain_yaml is not None:
            yaml_notes.append({"key": key, "where": f"{leaf.file}:{leaf.line}", "omegaconf": _plain(leaf.value),
                               "plain_yaml": _plain(leaf.plain_yaml), "kind": kind})
    return block


def _find_key(tree, key: str, path=()):
    if isinstance(tree, dict):
        for k, v in tree.items():
            if k == key and isinstance(v, dict):
                yield path + (k,), v
            yield from _find_key(v, key, path + (k,))


def harvest_nemo_rl(snap: Snapshot, root: str = "examples/configs/"):
    """Every ``megatron_cfg`` of every example config that names megatron_cfg itself (parents merged in)."""
    out, yaml_notes = [], []
    for path in sorted(p for p in snap.paths if p.startswith(root) and p.endswith((".yaml", ".yml"))):
        if "megatron_cfg" not in snap.read(path):
            continue
        tree = resolve_interpolations(load_with_defaults(snap, path))
        for where, cfg in _find_key(tree, "megatron_cfg"):
            site = f"{path}::{'.'.join(where)}"
            enabled = cfg.get("enabled")
            enabled = enabled.value if isinstance(enabled, Leaf) else None
            first = _first_line(cfg, path)
            model_keys = {k: v for k, v in cfg.items() if not isinstance(v, dict)}
            model_keys.update({k: v for k, v in (cfg.get("model_overrides") or {}).items()
                               if isinstance(v, Leaf)} if isinstance(cfg.get("model_overrides"), dict) else {})
            blocks = [_block_from_leaves("model", "megatron_cfg", model_keys, path, first, yaml_notes)]
            if isinstance(cfg.get("optimizer"), dict):
                blocks.append(_block_from_leaves("optimizer", "megatron_cfg.optimizer", cfg["optimizer"], path,
                                                 _first_line(cfg["optimizer"], path), yaml_notes))
            if isinstance(cfg.get("distributed_data_parallel_config"), dict):
                ddp = cfg["distributed_data_parallel_config"]
                blocks.append(_block_from_leaves("ddp", "megatron_cfg.distributed_data_parallel_config", ddp, path,
                                                 _first_line(ddp, path), yaml_notes))
            for block in blocks:
                block.notes.append(f"megatron_cfg.enabled={enabled!r}")
                out.append(record(snap.project, snap.commit, site, block))
    return out, _dedupe_notes(yaml_notes)


def _first_line(mapping: dict, prefer_file: str) -> int:
    lines = [v.line for v in mapping.values() if isinstance(v, Leaf) and v.file == prefer_file]
    return min(lines) if lines else 0


def _dedupe_notes(notes: list) -> list:
    seen, out = set(), []
    for n in notes:
        key = (n["key"], n["where"])
        if key not in seen:
            seen.add(key)
            out.append(n)
    return out


# ------------------------------------------------------------------------------------------------ verl
VERL_BLOCKS = {"override_transformer_config": "model", "override_ddp_config": "ddp",
               "override_optimizer_config": "optimizer"}
_HYDRA = re.compile(r"^\+{0,2}([\w.]+?)\.(override_transformer_config|override_ddp_config|override_optimizer_config)"
                    r"\.(\w+)=(.*)$")


def harvest_verl(snap: Snapshot):
    """verl's YAML defaults of the override_* blocks, and every shell script's Hydra overrides of them."""
    out, yaml_notes = [], []
    defaults: dict[str, Block] = {}
    for path in sorted(p for p in snap.paths if p.startswith("verl/trainer/config/") and p.endswith(".yaml")
                       and not Path(p).name.startswith("_generated")):
        tree = resolve_interpolations(load_yaml_leaves(snap.read(path), path))
        for key, kind in VERL_BLOCKS.items():
            for where, mapping in _find_key(tree, key):
                block = _block_from_leaves(kind, key, mapping, path, _first_line(mapping, path), yaml_notes)
                if path.endswith("engine/megatron.yaml") or path.endswith("optim/megatron.yaml"):
                    defaults.setdefault(key, block)
                if block.values or block.unevaluated:
                    out.append(record(snap.project, snap.commit, f"{path}::{'.'.join(where)}", block))
    for path in sorted(p for p in snap.paths if p.endswith(".sh")):
        text = snap.read(path)
        if "override_" not in text:
            continue
        groups: dict[tuple, Block] = {}
        for lineno, token in _shell_tokens(text):
            m = _HYDRA.match(token)
            if not m:
                continue
            prefix, key, name, raw = m.groups()
            group = (prefix, key)
            if group not in groups:
                base = defaults.get(key)
                groups[group] = copy.deepcopy(base) if base is not None else Block(VERL_BLOCKS[key], key, path, lineno)
                groups[group].file, groups[group].line, groups[group].notes = path, lineno, []
                if base is not None:
                    groups[group].notes.append(f"merged over verl's defaults in {base.file}")
            groups[group].set(name, _hydra_value(raw), path, lineno)
        for (prefix, key), block in groups.items():
            out.append(record(snap.project, snap.commit, f"{path}::{prefix}.{key}", block))
    return out, _dedupe_notes(yaml_notes)


def _shell_tokens(text: str):
    """(line, token) of a shell script, with backslash continuations joined (line of the token's own line)."""
    for lineno, line in enumerate(text.splitlines(), 1):
        stripped = line.strip()
        if stripped.startswith("#"):
            continue
        try:
            tokens = shlex.split(stripped.rstrip("\\"), comments=True, posix=True)
        except ValueError:
            tokens = stripped.rstrip("\\").split()
        for token in tokens:
            yield lineno, token


def _hydra_value(raw: str):
    if "$" in raw or raw == "":
        return Unknown(raw or "<empty>")
    try:
        return yaml.load(raw, Loader=OmegaLikeLoader)
    except yaml.YAMLError:
        return Unknown(raw)




# ------------------------------------------------------------------------------------------------ wrapper code
def keyword_sources(snap: Snapshot, path: str, class_name: str, block_key: str) -> list[dict]:
    """For each ``class_name(...)`` call in ``path``: which keywords come from the ``block_key`` mapping of the
    user's config (``cfg[...][block_key][KEY]``) and which are hard-coded constants (NeMo-RL's DDP config)."""
    out = []
    for node in ast.walk(ast.parse(snap.read(path))):
        if not (isinstance(node, ast.Call) and getattr(node.func, "id", None) == class_name):
            continue
        forwarded, constant, other = {}, {}, {}
        for kw in node.keywords:
            keys = [s.slice.value for s in ast.walk(kw.value) if isinstance(s, ast.Subscript)
                    and isinstance(s.slice, ast.Constant) and isinstance(s.slice.value, str)]
            if isinstance(kw.value, ast.Constant):
                constant[kw.arg] = kw.value.value
            elif block_key in keys:
                forwarded[kw.arg] = keys[0] if keys else None  # ast.walk visits the outermost subscript first
            else:
                other[kw.arg] = ast.unparse(kw.value)[:120]
        out.append({"file": path, "line": node.lineno, "class": class_name, "forwarded": forwarded,
                    "constant": constant, "other": other})
    return out


__all__ = ["Snapshot", "bridge_wrapper_defaults", "harvest_bridge", "harvest_nemo_rl", "harvest_verl", "keyword_sources"]
