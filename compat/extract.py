"""Read DDPConfig / OptimizerConfig facts out of Megatron source with ``ast``. Nothing is imported or executed.

Sources can be a wheel, an sdist or a source tree (a Megatron-LM checkout); archives are read in memory.
"""
from __future__ import annotations

import ast
import hashlib
from pathlib import Path

from .archive import open_source
from .errors import CandidateError

DDP_PATH = "megatron/core/distributed/distributed_data_parallel_config.py"
OPTIMIZER_PATH = "megatron/core/optimizer/optimizer_config.py"
PACKAGE_INFO_PATH = "megatron/core/package_info.py"
DDP_CLASS = "DistributedDataParallelConfig"
OPTIMIZER_CLASS = "OptimizerConfig"

# The OptimizerConfig fields the resolver and the precision checks care about.
OPTIMIZER_FIELDS_OF_INTEREST = (
    "optimizer", "bf16", "fp16", "use_precision_aware_optimizer", "main_grads_dtype", "main_params_dtype",
    "exp_avg_dtype", "exp_avg_sq_dtype", "use_distributed_optimizer", "use_layer_wise_distributed_optimizer",
)
_OPTIMIZER_PREFIXES = ("muon_",)


def _default_of(node: ast.expr | None) -> dict:
    if node is None:
        return {"required": True}
    if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "field":
        for kw in node.keywords:
            if kw.arg == "default":
                return _default_of(kw.value)
            if kw.arg == "default_factory":
                return {"default_expr": f"{ast.unparse(kw.value)}()"}
    try:
        value = ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return {"default_expr": ast.unparse(node)}
    if isinstance(value, tuple):
        value = list(value)
    return {"default": value}


def _field_doc(body: list, index: int) -> str:
    nxt = body[index + 1] if index + 1 < len(body) else None
    if isinstance(nxt, ast.Expr) and isinstance(nxt.value, ast.Constant) and isinstance(nxt.value.value, str):
        return " ".join(nxt.value.value.split())
    return ""


def _post_init_names(cls: ast.ClassDef) -> tuple[list[str], list[str]]:
    reads, writes = set(), set()
    for item in cls.body:
        if isinstance(item, ast.FunctionDef) and item.name == "__post_init__":
            for node in ast.walk(item):
                if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "self":
                    (writes if isinstance(node.ctx, ast.Store) else reads).add(node.attr)
    return sorted(reads), sorted(writes)


def extract_class(source: str | bytes, class_name: str, keep=None) -> dict:
    """Fields (name, annotation, default, doc) in order, plus the names ``__post_init__`` reads and writes."""
    try:
        tree = ast.parse(source)
    except SyntaxError as exc:
        raise CandidateError(f"cannot parse the source of {class_name}: {exc}") from None
    cls = next((n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == class_name), None)
    if cls is None:
        raise CandidateError(f"class {class_name} not found in the source")
    fields = []
    for i, item in enumerate(cls.body):
        if not (isinstance(item, ast.AnnAssign) and isinstance(item.target, ast.Name)):
            continue
        annotation = ast.unparse(item.annotation)
        if annotation.startswith(("ClassVar", "typing.ClassVar", "InitVar")):
            continue
        name = item.target.id
        if keep is not None and not keep(name):
            continue
        fields.append({"name": name, "annotation": annotation, **_default_of(item.value), "doc": _field_doc(cls.body, i)})
    reads, writes = _post_init_names(cls)
    names = {f["name"] for f in fields}
    return {
        "fields": fields,
        "post_init_reads": [n for n in reads if keep is None or n in names],
        "post_init_writes": [n for n in writes if keep is None or n in names],
    }


def _optimizer_keep(name: str) -> bool:
    return name in OPTIMIZER_FIELDS_OF_INTEREST or name.startswith(_OPTIMIZER_PREFIXES)


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def extract_sources(ddp_source: bytes, optimizer_source: bytes | None) -> dict:
    out = {"ddp": {"sha256": sha256(ddp_source), **extract_class(ddp_source, DDP_CLASS)}}
    if optimizer_source is not None:
        out["optimizer"] = {"sha256": sha256(optimizer_source),
                            **extract_class(optimizer_source, OPTIMIZER_CLASS, keep=_optimizer_keep)}
    return out


def version_from_package_info(source: bytes) -> str | None:
    """MAJOR.MINOR.PATCH + PRE_RELEASE from package_info.py, by reading its assignments."""
    values = {}
    for node in ast.parse(source).body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            try:
                values[node.targets[0].id] = ast.literal_eval(node.value)
            except (ValueError, TypeError, SyntaxError):
                pass
    if not all(k in values for k in ("MAJOR", "MINOR", "PATCH")):
        return None
    return f"{values['MAJOR']}.{values['MINOR']}.{values['PATCH']}{values.get('PRE_RELEASE', '') or ''}"


def extract_candidate(path: str | Path) -> dict:
    """Extract a wheel, sdist or source tree. Returns version, kind, requires_python and the config facts."""
    source = open_source(path)
    ddp = source.read_relative(DDP_PATH)
    if ddp is None:
        raise CandidateError(f"{source.label!r} has no {DDP_PATH} (is it megatron-core 0.7.0 or newer?)")
    facts = extract_sources(ddp, source.read_relative(OPTIMIZER_PATH))
    meta = source.metadata()
    version = meta.get("Version")
    if version is None:
        info = source.read_relative(PACKAGE_INFO_PATH)
        version = version_from_package_info(info) if info is not None else None
    requires_python = meta.get("Requires-Python") if source.kind == "wheel" else None
    return {"version": version, "kind": source.kind, "requires_python": requires_python, **facts}
