# SPDX-License-Identifier: Apache-2.0
"""The members of the Enum classes that config fields are annotated with, read from source with ``ast``.

A field annotated ``AttnBackend`` (or ``Optional[AttnBackend]``, ``Union[str, CudaGraphScope, ...]``) gets the
members of every Enum its annotation names, found in the config file itself or through its ``from X import Y``
statements. The registry keeps them with the field record, so a value naming no member is refused without
megatron installed, as the live build refuses it.
"""
from __future__ import annotations

import ast

_ENUM_BASES = {"Enum", "IntEnum", "StrEnum", "Flag", "IntFlag"}


def _is_enum(cls: ast.ClassDef) -> bool:
    return any(ast.unparse(b).rsplit(".", 1)[-1] in _ENUM_BASES for b in cls.bases)


def members_of(cls: ast.ClassDef) -> list[str]:
    """The member names an Enum class body assigns, in order (private and dunder names are not members)."""
    out = []
    for item in cls.body:
        targets = item.targets if isinstance(item, ast.Assign) else \
            [item.target] if isinstance(item, ast.AnnAssign) and item.value is not None else []
        for t in targets:
            if isinstance(t, ast.Name) and not t.id.startswith("_") and t.id not in out:
                out.append(t.id)
    return out


def imported_names(tree: ast.Module) -> dict[str, str]:
    """Name -> source path of the module it is imported from (``from megatron.core.enums import Fp8Recipe``)."""
    out = {}
    for node in tree.body:
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            path = node.module.replace(".", "/") + ".py"
            for alias in node.names:
                out[alias.asname or alias.name] = path
    return out


def annotation_names(annotation: str) -> list[str]:
    """The bare class names an annotation mentions (``Optional[AttnBackend]`` -> ``['Optional', 'AttnBackend']``)."""
    try:
        node = ast.parse(annotation, mode="eval")
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return []
    names = []
    for n in ast.walk(node):
        if isinstance(n, ast.Name):
            names.append(n.id)
        elif isinstance(n, ast.Constant) and isinstance(n.value, str):  # a quoted forward reference
            names.extend(annotation_names(n.value))
    return names


def field_enums(fields: list[dict], config_path: str, classes_of, read) -> dict[str, dict[str, list[str]]]:
    """Field name -> {Enum class name: members} for the fields whose annotation names an Enum.

    ``classes_of(path)`` gives the parsed top-level classes of a source file ({} when absent); ``read(path)`` its
    bytes (None when absent).
    """
    data = read(config_path)
    if data is None:
        return {}
    imports = imported_names(ast.parse(data))
    found: dict[str, list[str] | None] = {}
    out = {}
    for f in fields:
        enums = {}
        for name in annotation_names(f["annotation"]):
            if name not in found:
                found[name] = _lookup(name, config_path, imports, classes_of)
            if found[name] is not None:
                enums[name] = found[name]
        if enums:
            out[f["name"]] = enums
    return out


def _lookup(name: str, config_path: str, imports: dict, classes_of) -> list[str] | None:
    for path in (config_path, imports.get(name)):
        cls = classes_of(path).get(name) if path else None
        if cls is not None:
            return members_of(cls) if _is_enum(cls) else None
    return None


def _mixin(cls: ast.ClassDef) -> str | None:
    """The builtin type an Enum mixes in (``class Fp8Recipe(str, Enum)``: "str"), else None."""
    for base in cls.bases:
        name = ast.unparse(base)
        if name in ("str", "int", "float"):
            return name
        if name.rsplit(".", 1)[-1] in ("StrEnum", "IntEnum", "IntFlag"):
            return "str" if name.endswith("StrEnum") else "int"
    return None


def enum_facts(cls: ast.ClassDef) -> dict | None:
    """What the pre-check needs of an Enum class: its mixin ("str", "int" or None) and member -> value (a str or
    int constant; None for ``auto()``). A member that repeats an earlier value is an alias of it: it maps to that
    member's name (``aliases``). None when a value is neither (an alias could hide behind it)."""
    members, aliases, first = {}, {}, {}
    for item in cls.body:
        targets = item.targets if isinstance(item, ast.Assign) else \
            [item.target] if isinstance(item, ast.AnnAssign) and item.value is not None else []
        for t in targets:
            if not (isinstance(t, ast.Name) and not t.id.startswith("_") and t.id not in members):
                continue
            value = item.value
            if isinstance(value, ast.Constant) and type(value.value) in (str, int):
                key = (type(value.value).__name__, value.value)
                if key in first:
                    aliases[t.id] = first[key]
                first.setdefault(key, t.id)
                members[t.id] = value.value
            elif isinstance(value, ast.Call) and ast.unparse(value.func).rsplit(".", 1)[-1] == "auto" and \
                    not value.args:
                members[t.id] = None
            else:
                return None
    return {"mixin": _mixin(cls), "members": members, "aliases": aliases}


def enums_named_in(methods: list[tuple[ast.FunctionDef, str]], module, classes_of) -> dict[str, dict]:
    """Enum name -> ``enum_facts`` for each ``Name.attr`` of ``methods`` (a function and its module's path) whose
    Name is an Enum class of the release (defined in that module or imported into it with ``from X import``).
    ``module(path)`` gives the parsed module, ``classes_of(path)`` its top-level classes. A name that two modules
    bind to different classes is left out (an expression naming it stays unsupported)."""
    from .string_values import module_path

    out: dict[str, dict] = {}
    clashes: set[str] = set()
    for method, path in methods:
        wanted = {n.value.id for n in ast.walk(method)
                  if isinstance(n, ast.Attribute) and isinstance(n.value, ast.Name)}
        tree = module(path)
        imports = {}
        for stmt in tree.body if tree is not None else ():
            if isinstance(stmt, ast.ImportFrom):
                for alias in stmt.names:
                    imports[alias.asname or alias.name] = (module_path(stmt, path), alias.name)
        for name in sorted(wanted):
            cls = classes_of(path).get(name)
            if cls is None and name in imports and imports[name][0] is not None:
                cls = classes_of(imports[name][0]).get(imports[name][1])
            if cls is None or not _is_enum(cls):
                continue
            facts = enum_facts(cls)
            if facts is None:
                continue
            if name in out and out[name] != facts:
                clashes.add(name)
            out[name] = facts
    return {k: v for k, v in out.items() if k not in clashes}


__all__ = ["annotation_names", "enum_facts", "enums_named_in", "field_enums", "imported_names", "members_of"]
