"""Harvest Megatron config blocks (optimizer, DDP, model) from fetched snapshots of real projects, statically.

Nothing of a project is imported or run. Snapshots are git directories (``fetch`` writes
``MIRROR/<owner>+<name>/repo``), read with ``git``. The shared records are here, with two readers:

- NeMo-RL YAML (``examples/configs``): ``defaults:`` inheritance and ``${a.b}`` interpolation as NeMo-RL's loader
  does them, scalars typed as OmegaConf types them (``1e-8`` is a float there, a string for plain PyYAML); every
  ``megatron_cfg`` mapping gives an optimizer block, a DDP block and a model block (its scalar keys plus
  ``model_overrides``).
- verl: ``override_transformer_config``/``override_ddp_config``/``override_optimizer_config`` in its YAML defaults,
  and the Hydra overrides of those in its shell scripts (merged over the YAML defaults, as verl does).

Megatron-Bridge's Python recipes are read by ``real_configs_bridge.py``.
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


# ------------------------------------------------------------------------------------------------ git snapshots
class Snapshot:
    """One fetched repository: its HEAD commit, file list and file texts (``git show``, cached)."""

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
            "conditional": {k: {"when": c, "where": f"{f}:{ln}"}
                            for k, (c, f, ln) in sorted(block.conditional.items())},
            "notes": list(block.notes)}


def _plain(value):
    if isinstance(value, tuple):
        return [_plain(v) for v in value]
    if isinstance(value, list):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    return value


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


__all__ = ["Block", "Container", "Ref", "Snapshot", "Unknown", "harvest_nemo_rl", "harvest_verl", "keyword_sources",
           "record"]
