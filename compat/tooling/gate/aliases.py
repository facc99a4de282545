# SPDX-License-Identifier: Apache-2.0
"""Value renames: a value a release rewrites after construction (``if self.x == "gated_delta_net": self.x = "gdn"``
in ``__post_init__``, or ``self.x = normalize(self.x)`` where ``normalize`` looks the value up in a module-level dict
of strings). Read with ``ast`` from the candidate's source, never run.

The shim's value-alias data is ``compat/data/value_aliases.json`` (``{"format": 1, "aliases": [{"config", "field",
"old", "new", "since", "evidence"}]}``); a missing or unreadable file means "no alias data".
"""
from __future__ import annotations

import ast
import json

from ...configs import CONFIGS
from ...registry import Schema, load_json
from ..archive import open_source
from .diff import DECISION, INFO, Change

MAX_PARSE_BYTES = 4 * 1024 * 1024  # a config file is ~100 kB; a module holding a helper is smaller


def _self_attr(node) -> str | None:
    if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "self":
        return node.attr
    return None


def _str(node) -> str | None:
    return node.value if isinstance(node, ast.Constant) and isinstance(node.value, str) else None


def _tested_values(test, name: str) -> list[str]:
    """The constants ``test`` compares ``self.<name>`` with (``==`` or ``in (...)``)."""
    if not (isinstance(test, ast.Compare) and len(test.ops) == 1 and _self_attr(test.left) == name):
        return []
    op, right = test.ops[0], test.comparators[0]
    if isinstance(op, ast.Eq):
        return [v for v in (_str(right),) if v is not None]
    if isinstance(op, ast.In) and isinstance(right, (ast.Tuple, ast.List, ast.Set)):
        return [v for v in map(_str, right.elts) if v is not None]
    return []


class _Module:
    """One parsed file of the candidate and its imports, for following a normalising helper one step."""

    def __init__(self, source, path: str):
        self.source, self.path = source, path
        raw = source.read_relative(path, limit=MAX_PARSE_BYTES)
        try:
            self.tree = ast.parse(raw) if raw is not None else None
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            self.tree = None
        self._module_imports: dict[str, tuple[str, str]] | None = None

    def module_imports(self) -> dict[str, tuple[str, str]]:
        """``imports`` of the whole file, walked once however many of its classes ask."""
        if self._module_imports is None:
            self._module_imports = self.imports(self.tree)
        return self._module_imports

    def imports(self, scope) -> dict[str, tuple[str, str]]:
        """Local name -> (file, name there) for ``from megatron.x import y`` statements in ``scope``."""
        out = {}
        for node in ast.walk(scope):
            if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("megatron"):
                for alias in node.names:
                    out[alias.asname or alias.name] = (node.module.replace(".", "/") + ".py", alias.name)
        return out

    def top(self, name: str):
        for node in self.tree.body if self.tree else ():
            if isinstance(node, (ast.FunctionDef, ast.ClassDef)) and node.name == name:
                return node
            if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == name for t in node.targets):
                return node
        return None


def _helper_map(module: _Module, func: ast.FunctionDef) -> list[tuple[str, str, int]]:
    """(old, new, line) pairs a normalising helper applies: ``MAP.get(arg)`` with ``MAP`` a module dict of
    strings, or ``if arg == "old": return "new"``."""
    out = []
    param = func.args.args[0].arg if func.args.args else None
    for node in ast.walk(func):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "get" \
                and isinstance(node.func.value, ast.Name):
            table = module.top(node.func.value.id)
            if isinstance(table, ast.Assign) and isinstance(table.value, ast.Dict):
                for k, v in zip(table.value.keys, table.value.values):
                    if _str(k) is not None and _str(v) is not None:
                        out.append((_str(k), _str(v), table.lineno))
        if isinstance(node, ast.If) and isinstance(node.test, ast.Compare) and len(node.test.ops) == 1 \
                and isinstance(node.test.left, ast.Name) and node.test.left.id == param \
                and isinstance(node.test.ops[0], ast.Eq) and _str(node.test.comparators[0]) is not None:
            for stmt in node.body:
                if isinstance(stmt, ast.Return) and _str(stmt.value) is not None:
                    out.append((_str(node.test.comparators[0]), _str(stmt.value), stmt.lineno))
    return out


def _rewrites(module: _Module, post_init: ast.FunctionDef, module_at) -> list[tuple[str, str, str, str]]:
    """(field, old, new, evidence) for every value rewrite in ``post_init``; ``module_at(path)``: the candidate's
    parsed file at ``path``."""
    out = []
    local_imports = {**module.module_imports(), **module.imports(post_init)}
    for node in ast.walk(post_init):
        if isinstance(node, ast.If):
            for stmt in node.body:
                if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and _str(stmt.value) is not None:
                    name = _self_attr(stmt.targets[0])
                    for old in _tested_values(node.test, name) if name else ():
                        if old != _str(stmt.value):
                            out.append((name, old, _str(stmt.value), f"{module.path}:{stmt.lineno}"))
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.value, ast.Call) \
                and isinstance(node.value.func, ast.Name) and node.value.args:
            name = _self_attr(node.targets[0])
            if not name or _self_attr(node.value.args[0]) != name:
                continue
            helper_file, helper_name = local_imports.get(node.value.func.id, (module.path, node.value.func.id))
            helper_module = module_at(helper_file)
            func = helper_module.top(helper_name)
            if isinstance(func, ast.FunctionDef):
                for old, new, line in _helper_map(helper_module, func):
                    out.append((name, old, new, f"{helper_file}:{line} (via {helper_name}, {module.path}:"
                                                f"{node.lineno})"))
    return out


def value_rewrites(path) -> list[dict]:
    """Every value rewrite in the ``__post_init__`` of each config class of the candidate at ``path``."""
    source = open_source(path)
    modules: dict[str, _Module] = {}  # each file parsed once: three optimizer classes share one, two model classes

    def module_at(file: str) -> _Module:
        if file not in modules:
            modules[file] = _Module(source, file)
        return modules[file]

    out, seen = [], set()
    for key, config in CONFIGS.items():
        module = module_at(config.path)
        cls = module.top(config.class_name)
        if not isinstance(cls, ast.ClassDef):
            continue
        post = next((n for n in cls.body if isinstance(n, ast.FunctionDef) and n.name == "__post_init__"), None)
        for name, old, new, evidence in _rewrites(module, post, module_at) if post else ():
            if (config.class_name, name, old) not in seen:
                seen.add((config.class_name, name, old))
                out.append({"config": key, "field": name, "old": old, "new": new, "evidence": evidence})
    return out


def shim_aliases() -> tuple[list[dict], str | None]:
    """The shim's value aliases, and why there are none (missing or unreadable file)."""
    try:
        data = load_json("value_aliases.json")
    except FileNotFoundError:
        return [], "compat/data/value_aliases.json does not exist: the shim has no value-alias data"
    except (OSError, ValueError) as exc:
        return [], f"compat/data/value_aliases.json is unreadable ({type(exc).__name__})"
    aliases = data.get("aliases") if isinstance(data, dict) else None
    if data.get("format") != 1 or not isinstance(aliases, list):
        return [], "compat/data/value_aliases.json is not format 1"
    return [a for a in aliases if isinstance(a, dict)], None


def _alias_key(alias: dict) -> tuple:
    """A hashable key for an alias record: values may be lists (``cuda_graph_modules``: 'full' -> [])."""
    return tuple(json.dumps(alias.get(k), sort_keys=True, default=repr) for k in ("config", "field", "old", "new"))


def alias_changes(rewrites: list[dict], base_schemas: dict[str, Schema]) -> list[Change]:
    """A value rename for each rewrite the compared release did not already do: its new value is one the compared
    release's annotation does not list (a rewrite into a value it already accepted may be old, and is not shown)."""
    known, why_none = shim_aliases()
    listed = {_alias_key(a) for a in known}
    out = []
    for r in rewrites:
        base = base_schemas.get(r["config"])
        field = base.get(r["field"]) if base is not None else None
        choices = field.type.choices if field is not None else None
        if field is not None and (choices is None or r["new"] in choices):
            continue
        config = CONFIGS[r["config"]].class_name
        in_shim = _alias_key(r) in listed
        shim = (f"value_aliases.json already maps {r['old']!r} to {r['new']!r}" if in_shim else
                f"not in the shim's value-alias data ({why_none or 'value_aliases.json does not list it'}): a config "
                f"built with {r['old']!r} holds {r['new']!r} after construction; add the alias before --accept")
        out.append(Change(INFO if in_shim else DECISION, "value rename", r["field"], repr(r["old"]), repr(r["new"]),
                          shim, config, [f"rewritten after construction: {r['evidence']}"]))
    return out
