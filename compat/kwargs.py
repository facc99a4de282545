# SPDX-License-Identifier: Apache-2.0
"""The exact kwargs of a config class for a megatron-core build, without the provenance: what a training job
passes to the class (``ddp_kwargs``, ``optimizer_kwargs``, ``transformer_kwargs``, ``config_kwargs``), with dtype
names turned into torch dtypes (``materialize``). ``compat.resolution.resolve`` does the work."""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .canonical import Canonical, canonical
from .errors import InvalidValueError
from .registry import registry
from .resolution import Resolution, resolve

DTYPE_FORMATS = ("torch", "str")


def materialize(kwargs: dict, res_or_canon: Resolution | Canonical | None = None) -> dict:
    """Turn dtype names into torch dtypes (for fields whose annotation is a torch.dtype)."""
    if res_or_canon is None:
        canon = canonical(registry(), config="ddp")
    elif isinstance(res_or_canon, Resolution):
        canon = canonical(registry(), None, config=res_or_canon.config)
    else:
        canon = res_or_canon
    return canon.materialize(kwargs)


def config_kwargs(config: str, overrides: Mapping[str, Any] | None = None, version: str | None = None, *,
                  lenient: bool = False, dtype_format: str = "torch", optimizer_config: Any = None) -> dict[str, Any]:
    """The exact kwargs of ``config`` for ``version`` (registry only; megatron not needed)."""
    if dtype_format not in DTYPE_FORMATS:
        raise InvalidValueError("dtype_format", dtype_format, f"must be one of {', '.join(map(repr, DTYPE_FORMATS))}")
    res = resolve(overrides, optimizer_config, version, config=config, lenient=lenient)
    return materialize(res.kwargs, res) if dtype_format == "torch" else res.kwargs


def ddp_kwargs(overrides: Mapping[str, Any] | None = None, optimizer_config: Any = None, version: str | None = None,
               *, lenient: bool = False, dtype_format: str = "torch") -> dict[str, Any]:
    """The exact DistributedDataParallelConfig kwargs for ``version`` (registry only; megatron not needed).

    Dtype values are torch dtypes (torch is imported only when one is present); ``dtype_format="str"`` gives
    names such as "bfloat16" instead.
    """
    return config_kwargs("ddp", overrides, version, lenient=lenient, dtype_format=dtype_format,
                         optimizer_config=optimizer_config)


def optimizer_kwargs(overrides: Mapping[str, Any] | None = None, version: str | None = None, *, lenient: bool = False,
                     dtype_format: str = "torch", config: str = "optimizer") -> dict[str, Any]:
    """The exact OptimizerConfig kwargs for ``version`` (``config="adam_optimizer"`` for the 0.16-0.17 subclass)."""
    return config_kwargs(config, overrides, version, lenient=lenient, dtype_format=dtype_format)


def transformer_kwargs(overrides: Mapping[str, Any] | None = None, version: str | None = None, *,
                       lenient: bool = False, dtype_format: str = "torch", config: str = "transformer") -> dict[str, Any]:
    """The exact TransformerConfig kwargs for ``version`` (``config="mla"`` for MLATransformerConfig)."""
    return config_kwargs(config, overrides, version, lenient=lenient, dtype_format=dtype_format)


__all__ = ["DTYPE_FORMATS", "config_kwargs", "ddp_kwargs", "materialize", "optimizer_kwargs", "transformer_kwargs"]
