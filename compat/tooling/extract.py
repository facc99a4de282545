# SPDX-License-Identifier: Apache-2.0
"""Read Megatron config dataclasses out of source with ``ast``. Nothing is imported or executed.

Sources can be a wheel, an sdist or a source tree (a Megatron-LM checkout); archives are read in memory through
``compat.tooling.archive``. Every config in ``compat.configs`` is extracted with its inheritance: fields in dataclass order
(base fields first, a re-declared field keeps its base position), and the ``__post_init__`` facts of the whole chain
(``compat.postinit``). A class defined twice in a file counts once: the last definition, as in Python.
"""
from __future__ import annotations

import ast
import hashlib
import operator
from pathlib import Path

from ..configs import CONFIGS, DDP_PATH, OPTIMIZER_PATH, path_of_class
from ..errors import CandidateError
from ..postinit import post_init_facts, post_init_method
from ..version import version_from_package_info
from .archive import open_source
from .enum_members import enums_named_in, field_enums
from .pysource import SourceBudget, parse_source
from .string_values import Scope, StringValues

PACKAGE_INFO_PATH = "megatron/core/package_info.py"
DDP_CLASS = "DistributedDataParallelConfig"

# The OptimizerConfig fields the resolver and the precision checks read (the gate treats their changes as breaking).
OPTIMIZER_FIELDS_OF_INTEREST = (
    "optimizer", "bf16", "fp16", "use_precision_aware_optimizer", "main_grads_dtype", "main_params_dtype",
    "exp_avg_dtype", "exp_avg_sq_dtype", "use_distributed_optimizer", "use_layer_wise_distributed_optimizer",
    "use_layer_wise_param_layout", "overlap_param_gather",
)
MAX_FOLDED_BITS = 1024  # a folded default (1 << 30, 2 ** 64) stays far below; past this it is kept as an expression
MAX_DEFAULT_TEXT = 10_000  # characters of a default kept as an expression
_FOLD = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul, ast.Div: operator.truediv,
         ast.FloorDiv: operator.floordiv, ast.Pow: operator.pow}
__all__ = ["DDP_PATH", "OPTIMIZER_PATH", "extract_candidate", "extract_class", "facts_from_classes", "sha256"]


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


# ------------------------------------------------------------------------------------------------ defaults
def _literal(node: ast.expr):
    """ast.literal_eval plus arithmetic on numbers (``1024 * 1024``); raises ValueError when not a literal or when
    a folded int would pass MAX_FOLDED_BITS (its bits are bounded from the operands' before it is computed)."""
    if isinstance(node, ast.BinOp) and type(node.op) in _FOLD:
        left, right = _literal(node.left), _literal(node.right)
        if not all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in (left, right)) or \
                (isinstance(node.op, ast.Pow) and abs(right) > 64) or _folded_bits(node.op, left, right) > MAX_FOLDED_BITS:
            raise ValueError("not numeric, or too large to fold")
        return _FOLD[type(node.op)](left, right)
    value = ast.literal_eval(node)
    if isinstance(value, int) and value.bit_length() > MAX_FOLDED_BITS:
        raise ValueError("too large to fold")
    return value


def _folded_bits(op: ast.operator, left, right) -> int:
    """An upper bound on the bits of ``left op right`` for ints (0 when a float is involved: it overflows)."""
    if not (isinstance(left, int) and isinstance(right, int)):
        return 0
    bits = max(left.bit_length(), right.bit_length())
    if isinstance(op, ast.Pow):
        return left.bit_length() * max(right, 0)
    return bits + (right.bit_length() if isinstance(op, ast.Mult) else 1)


def _default_of(node: ast.expr | None) -> dict:
    if node is None:
        return {"required": True}
    if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "field":
        for kw in node.keywords:
            if kw.arg == "default":
                return _default_of(kw.value)
            if kw.arg == "default_factory":
                return _factory(kw.value)
        return {"required": True}
    try:
        value = _literal(node)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError, ZeroDivisionError, OverflowError):
        return {"default_expr": ast.unparse(node)}
    if isinstance(value, float) and value != value or value in (float("inf"), float("-inf")):
        return {"default_expr": ast.unparse(node)}  # JSON holds no NaN or infinity
    if isinstance(value, (tuple, set, frozenset)):
        value = list(value)  # a tuple literal: JSON has no tuples (read back as a tuple)
    return {"default": value}


def _factory(node: ast.expr) -> dict:
    name = ast.unparse(node)
    if name in ("list", "dict"):
        return {"default": [] if name == "list" else {}, "factory": name}
    if name == "tuple":
        return {"default": []}  # read back as a tuple, like a tuple literal
    if isinstance(node, ast.Lambda):
        try:
            value = _literal(node.body)
        except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError, ZeroDivisionError, OverflowError):
            return {"default_expr": f"({name})()"}
        if isinstance(value, (list, dict)):
            return {"default": value, "factory": "list" if isinstance(value, list) else "dict"}
    return {"default_expr": f"{name}()"}


def _field_doc(body: list, index: int) -> str:
    nxt = body[index + 1] if index + 1 < len(body) else None
    if isinstance(nxt, ast.Expr) and isinstance(nxt.value, ast.Constant) and isinstance(nxt.value.value, str):
        return " ".join(nxt.value.value.split())
    return ""


# ------------------------------------------------------------------------------------------------ classes
def _is_dataclass(cls: ast.ClassDef) -> bool:
    for dec in cls.decorator_list:
        target = dec.func if isinstance(dec, ast.Call) else dec
        if ast.unparse(target).rsplit(".", 1)[-1] == "dataclass":
            return True
    return False


def own_fields(cls: ast.ClassDef) -> list[dict]:
    """The fields a class body declares, in order (a name annotated twice keeps its first position)."""
    out: dict[str, dict] = {}
    for i, item in enumerate(cls.body):
        if not (isinstance(item, ast.AnnAssign) and isinstance(item.target, ast.Name)):
            continue
        annotation = ast.unparse(item.annotation)
        if annotation.startswith(("ClassVar", "typing.ClassVar", "InitVar", "dataclasses.InitVar", "KW_ONLY",
                                  "dataclasses.KW_ONLY")):
            continue
        name = item.target.id
        record = {"name": name, "annotation": annotation, **_default_of(item.value), "doc": _field_doc(cls.body, i),
                  "owner": cls.name}
        if len(record.get("default_expr", "")) > MAX_DEFAULT_TEXT:
            raise CandidateError(f"the default of {cls.name}.{name} is an expression of {len(record['default_expr'])} "
                                 f"characters, over the {MAX_DEFAULT_TEXT}-character cap")
        out[name] = record if name not in out else {**record, "doc": record["doc"] or out[name]["doc"]}
    return list(out.values())


def merged_fields(mro: list[ast.ClassDef]) -> list[dict]:
    """Dataclass field order over an MRO (most derived first): base fields first, re-declarations in place."""
    fields: dict[str, dict] = {}
    for cls in reversed(mro):
        if cls is mro[0] or _is_dataclass(cls):
            for record in own_fields(cls):
                fields[record["name"]] = record  # dict keeps the first position of a re-declared name
    return list(fields.values())


def facts_from_classes(mro: list[ast.ClassDef], target_names=None, enums: dict | None = None) -> dict:
    """Snapshot facts of the class ``mro[0]``: class, bases, fields and ``__post_init__`` facts (``target_names``,
    ``enums``: see ``compat.postinit.post_init_facts``)."""
    fields = merged_fields(mro)
    return {"class": mro[0].name, "bases": [c.name for c in mro[1:]], "fields": fields,
            "post_init": post_init_facts(mro, {f["name"]: f["annotation"] for f in fields}, target_names, enums)}


def parse_classes(source: bytes | str, label: str, budget: SourceBudget | None = None) -> dict[str, ast.ClassDef]:
    tree = parse_source(source, label, budget)
    classes: dict[str, ast.ClassDef] = {}
    for node in tree.body:
        if isinstance(node, ast.ClassDef):
            classes[node.name] = node  # the last definition wins
    return classes


class _Files:
    """Parsed config files of one source, each read and parsed once."""

    def __init__(self, read):
        self.read, self.parsed, self.raw, self.trees = read, {}, {}, {}
        self.budget = SourceBudget()
        self.path_of: dict[int, str] = {}  # id(ClassDef) -> the file it was read from
        self._strings = StringValues(self._module_or_none)

    def module(self, path: str) -> ast.Module | None:
        """The parsed module at ``path`` (a package's ``__init__.py`` for ``pkg.py``), None when absent."""
        for candidate in (path, path.removesuffix(".py") + "/__init__.py"):
            if candidate not in self.trees:
                data = self.read(candidate)
                self.raw[candidate] = data
                self.trees[candidate] = None if data is None else parse_source(data, candidate, self.budget)
            if self.trees[candidate] is not None:
                return self.trees[candidate]
        return None

    def _module_or_none(self, path: str) -> ast.Module | None:
        try:  # a module read only to name setattr targets: unreadable means "cannot name them", not a failure
            return self.module(path)
        except CandidateError:
            return None

    def classes(self, path: str) -> dict[str, ast.ClassDef]:
        if path not in self.parsed:
            tree = self.module(path) if path.endswith(".py") or path == "<source>" else None
            classes = {}
            for node in tree.body if tree is not None else ():
                if isinstance(node, ast.ClassDef):
                    classes[node.name] = node  # the last definition wins
                    self.path_of[id(node)] = path
            self.parsed[path] = classes
        return self.parsed[path]

    def enums(self, mro: list[ast.ClassDef]) -> dict:
        """The Enum classes the ``__post_init__`` methods of ``mro`` name members of (``enum_members``)."""
        methods = [(m, self.path_of[id(c)]) for c in mro if id(c) in self.path_of
                   if (m := post_init_method(c)) is not None]
        return enums_named_in(methods, self._module_or_none, self.classes)

    def target_names(self, target: ast.expr, function: ast.FunctionDef, cls: ast.ClassDef):
        """The strings a setattr target in ``cls.__post_init__`` may be (``compat.tooling.string_values``)."""
        path = self.path_of.get(id(cls))
        return None if path is None else self._strings.strings(target, Scope(path, function))

    def mro(self, name: str, path: str) -> list[ast.ClassDef] | None:
        cls = self.classes(path).get(name)
        if cls is None:
            return None
        chain, seen = [cls], {name}
        while True:
            base = next((b for b in (ast.unparse(x).rsplit(".", 1)[-1] for x in chain[-1].bases)
                         if b not in seen and self._find(b, path)), None)
            if base is None:
                return chain
            seen.add(base)
            chain.append(self._find(base, path))

    def _find(self, name: str, near: str) -> ast.ClassDef | None:
        found = self.classes(near).get(name)
        if found is None and (other := path_of_class(name)) is not None:
            found = self.classes(other).get(name)
        return found


def extract_class(source: str | bytes, class_name: str) -> dict:
    """One class from one file's source (bases defined in the same file are followed)."""
    files = _Files(lambda path: source if path == "<source>" else None)
    mro = files.mro(class_name, "<source>")
    if mro is None:
        raise CandidateError(f"class {class_name} not found in the source")
    return facts_from_classes(mro, files.target_names, files.enums(mro))


def extract_configs(read) -> dict:
    """Facts of every known config that the source defines; ``read(path)`` returns bytes or None."""
    files = _Files(read)
    out = {}
    for key, config in CONFIGS.items():
        mro = files.mro(config.class_name, config.path)
        if mro is not None:
            facts = facts_from_classes(mro, files.target_names, files.enums(mro))
            enums = field_enums(facts["fields"], config.path, files.classes, files.raw.get)
            facts["fields"] = [{**f, "enums": enums[f["name"]]} if f["name"] in enums else f for f in facts["fields"]]
            out[key] = {"sha256": sha256(files.raw[config.path]), **facts}
    return out


def extract_candidate(path: str | Path) -> dict:
    """Extract a wheel, sdist or source tree: version, kind, requires_python and one entry per config found."""
    source = open_source(path)
    if source.read_relative(DDP_PATH) is None:
        raise CandidateError(f"{source.label!r} has no {DDP_PATH} (is it megatron-core 0.7.0 or newer?)")
    configs = extract_configs(source.read_relative)
    if "ddp" not in configs:
        raise CandidateError(f"{DDP_PATH} in {source.label!r} defines no {DDP_CLASS}")
    meta = source.metadata()
    version = meta.get("Version")
    if version is None:
        info = source.read_relative(PACKAGE_INFO_PATH)
        version = version_from_package_info(parse_source(info, PACKAGE_INFO_PATH)) if info is not None else None
    requires_python = meta.get("Requires-Python") if source.kind == "wheel" else None
    return {"version": version, "kind": source.kind, "requires_python": requires_python, **configs}

