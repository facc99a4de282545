# SPDX-License-Identifier: Apache-2.0
"""Resolve the DDP, optimizer and transformer configs of one run together, so that the cross rules apply."""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from .resolution import Resolution, materialize, resolve

_ROUNDS = 3  # an "equal" rule can ask the optimizer to follow DDP once; a third round would mean a cycle


@dataclass
class ConfigResolutions:
    version: str
    ddp: Resolution | None = None
    optimizer: Resolution | None = None
    transformer: Resolution | None = None

    def items(self) -> list[tuple[str, Resolution]]:
        return [(k, r) for k, r in (("ddp", self.ddp), ("optimizer", self.optimizer),
                                    ("transformer", self.transformer)) if r is not None]

    def kwargs(self, dtype_format: str = "str") -> dict:
        """{"ddp": {...}, "optimizer": {...}, "transformer": {...}} for the configs that were given."""
        return {k: (materialize(r.kwargs, r) if dtype_format == "torch" else dict(r.kwargs)) for k, r in self.items()}

    def to_dict(self) -> dict:
        return {"version": self.version, **{k: r.to_dict() for k, r in self.items()}}


def resolve_configs(ddp: Mapping[str, Any] | None = None, optimizer: Mapping[str, Any] | None = None,
                    transformer: Mapping[str, Any] | None = None, version: str | None = None, *, lenient: bool = False,
                    transformer_config: str = "transformer") -> ConfigResolutions:
    """Resolve the configs given (overrides dicts, canonical or old names) for one megatron-core build.

    The optimizer is resolved first; DDP then sees it (the FP32 resolver rule, the cross rules of
    cross_rules.json); when a cross rule needs the optimizer to follow a DDP value the user set, the optimizer
    is resolved again with that value (source "cross-config rule"). ``transformer_config="mla"`` resolves
    MLATransformerConfig. Unset configs stay None.
    """
    opt_extra: dict = {}
    opt = resolve(optimizer, config="optimizer", version=version, lenient=lenient) if optimizer is not None else None
    tf = (resolve(transformer, config=transformer_config, version=version, lenient=lenient)
          if transformer is not None else None)
    ddp_res = None
    if ddp is not None:
        for _ in range(_ROUNDS):
            ddp_res = resolve(ddp, opt, version, config="ddp", lenient=lenient)
            wanted = ddp_res.requests.get("optimizer")
            if not wanted or opt is None:
                break
            opt_extra.update(wanted)
            opt = resolve(optimizer, config="optimizer", version=version, lenient=lenient, extra=opt_extra)
    first = next(r for r in (ddp_res, opt, tf) if r is not None) if (ddp_res or opt or tf) else None
    return ConfigResolutions(first.version if first else (version or ""), ddp_res, opt, tf)


__all__ = ["ConfigResolutions", "resolve_configs"]
