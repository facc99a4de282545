# SPDX-License-Identifier: Apache-2.0
"""The one view of what a config class of the target build will hold: by canonical names (the rules between
configs) and by the target's own names, as ``__post_init__`` first sees them (its checks, the curated checks).

A value set (by the user or a rule) wins; else the build's default; for a canonical field the build has under an
older name, that name's default carried forward; for one the build lacks, the value it behaves as (implied).
"""
from __future__ import annotations

from collections.abc import Mapping
from functools import lru_cache

from .annotations import type_of
from .canonical import Canonical
from .evaluate import UNKNOWN, Dtype, evaluate
from .registry import Schema


def post_init_values(schema: Schema, kwargs: Mapping, overrides: Mapping | None = None) -> dict:
    """Target name -> the value ``__post_init__`` first sees: the class's defaults (UNKNOWN where a default is an
    expression or there is none; an Enum member where it names one), then ``kwargs``, then ``overrides``; dtype
    values as ``Dtype``."""
    env = {**_post_init_defaults(schema), **kwargs, **(overrides or {})}
    for name, value in (*kwargs.items(), *(overrides or {}).items()):
        if isinstance(value, str):
            if _is_dtype_field(schema, name):
                env[name] = Dtype(value)
        elif type(value).__module__ == "torch" and type(value).__name__ == "dtype":
            env[name] = Dtype(str(value).removeprefix("torch."))
    return env


@lru_cache(maxsize=64)  # per schema (cached, compared by identity): the part of the view no value changes
def _post_init_defaults(schema: Schema) -> dict:
    defaults = {}
    for f in schema.fields:
        value = f.default if f.exact and not f.required else UNKNOWN
        if not f.exact and not f.required and schema.enums and f.default_text.count(".") == 1:
            value = evaluate(f.default_text, {}, enums=schema.enums)  # AttnBackend.auto: its member
        elif isinstance(value, str) and _is_dtype_field(schema, f.name):
            value = Dtype(value)
        defaults[f.name] = value
    return defaults


@lru_cache(maxsize=4096)
def _is_dtype_field(schema: Schema, name: str) -> bool:
    """A torch.dtype field that takes no str: a str value there is a dtype's name."""
    f = schema.get(name)
    kinds = type_of(f.annotation).kinds() if f is not None else set()
    return "dtype" in kinds and "str" not in kinds


def forward(rename: Mapping, value):
    """An older name's value as its new name reads it (the rename's value map)."""
    return next((after for before, after in rename.get("map", []) if before == value), value)


class EffectiveConfig:
    """``chosen``: canonical name -> the value set for it (by the user or a rule)."""

    def __init__(self, schema: Schema, canon: Canonical, chosen: Mapping):
        self.schema, self.canon, self.chosen = schema, canon, chosen

    def by_canonical(self) -> dict:
        return {**_canonical_defaults(self.schema, self.canon), **self.chosen}

    def kwargs(self) -> dict:
        """The chosen values under the target's names (an older name with its value mapped back); a value the
        build cannot hold is left out (placing it is what refuses it)."""
        out = {}
        for name, value in self.chosen.items():
            if name in self.schema:
                out[name] = value
            elif (old := self.canon.old_name_in(name, self.schema)) is not None:
                try:
                    out[old] = self.canon.to_old(name, value)
                except KeyError:
                    pass
        return out

    def by_target(self) -> dict:
        return post_init_values(self.schema, self.kwargs())

    def by_any_name(self) -> dict:
        """Both views in one mapping (a target name wins where the two spell a field alike)."""
        return {**self.by_canonical(), **self.by_target()}


@lru_cache(maxsize=64)
def _canonical_defaults(schema: Schema, canon: Canonical) -> dict:
    out = {}
    for name in canon.fields:
        if name in schema:
            out[name] = schema.get(name).default
        elif (old := canon.old_name_in(name, schema)) is not None:
            out[name] = forward(canon.renames[old], schema.get(old).default)
        else:
            out[name] = canon.implied(name, schema.version)[0]
    return out


__all__ = ["EffectiveConfig", "forward", "post_init_values"]
