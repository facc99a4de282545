# SPDX-License-Identifier: Apache-2.0
"""The one reader of the optimizer config a DDP resolution depends on, whatever the caller passed.

A ``Resolution`` of the optimizer config (its fields, those its build has), a built Megatron ``OptimizerConfig``
or another dataclass, a mapping, or an object with ``.get()`` (an OmegaConf node). The resolver rules read single
values (``get``); the rules between configs read it as a ``cross.Side`` (``side``).
"""
from __future__ import annotations

import dataclasses
from collections.abc import Mapping

from .cross import Side, normalize
from .errors import FieldTypeError

MISSING = object()


def check_optimizer_config(optimizer_config) -> None:
    """The optimizer config must be None, a mapping, a dataclass or an object with attributes (not a scalar)."""
    if optimizer_config is None or isinstance(optimizer_config, Mapping):
        return
    if isinstance(optimizer_config, (str, bytes, int, float, bool, list, tuple, set)):
        raise FieldTypeError("optimizer_config", optimizer_config,
                             "an OptimizerConfig, a dataclass, a mapping of OptimizerConfig fields, or None")


class OptimizerReader:
    """``OptimizerReader(obj)`` for what a user passed; ``OptimizerReader.of_fields(resolution.fields)`` for a
    resolved optimizer config (name -> FieldResolution)."""

    def __init__(self, obj: object):
        check_optimizer_config(obj)
        self.obj = obj
        self._fields: Mapping | None = None

    @classmethod
    def of_fields(cls, fields: Mapping) -> OptimizerReader:
        reader = cls(None)
        reader._fields = fields
        return reader

    @property
    def present(self) -> bool:
        return self.obj is not None or self._fields is not None

    def get(self, name: str, default=None):
        """A field's value; ``default`` when the config does not carry it (or its build lacks it)."""
        if self._fields is not None:
            f = self._fields.get(name)
            return f.value if f is not None and f.target_name is not None else default
        cfg = self.obj
        if cfg is None:
            return default
        if isinstance(cfg, Mapping):
            return cfg.get(name, default)
        if dataclasses.is_dataclass(cfg) or not callable(getattr(cfg, "get", None)):
            return getattr(cfg, name, default)
        value = cfg.get(name, MISSING)
        return getattr(cfg, name, default) if value is MISSING else value

    def side(self, names, defaults: Mapping | None = None) -> Side:
        """The optimizer's side for the rules between configs. A resolved config: its values, the user's choices and
        the fields its build has. A user's object: the release ``defaults`` overlaid with every value it carries;
        only carried values count as chosen, and it cannot be changed here (a needed change is a warning)."""
        if self._fields is not None:
            fields = self._fields
            return Side("optimizer", {n: f.value for n, f in fields.items()},
                        {n for n, f in fields.items() if f.source == "user"},
                        lambda n: n in fields and fields[n].target_name is not None)
        if isinstance(self.obj, Mapping):  # only the keys it has (a mapping may be large; names are ~80)
            found = {n: self.obj[n] for n in names if n in self.obj}
        else:
            found = {n: v for n in names if (v := self.get(n, MISSING)) is not MISSING}
        carried = {n: normalize(v) for n, v in found.items()}
        values = {**(defaults or {}), **carried}  # registry defaults: JSON values, dtypes already by name
        return Side("optimizer", values, set(carried), lambda n: n in values, settable=False,
                    built=not isinstance(self.obj, Mapping), defaults=dict(defaults or {}))


def reader_of(optimizer_config: object) -> OptimizerReader:
    return optimizer_config if isinstance(optimizer_config, OptimizerReader) else OptimizerReader(optimizer_config)


__all__ = ["OptimizerReader", "check_optimizer_config", "reader_of"]
