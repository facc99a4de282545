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


__all__ = ["annotation_names", "field_enums", "imported_names", "members_of"]
