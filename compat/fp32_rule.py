# SPDX-License-Identifier: Apache-2.0
"""The FP32-by-default rule for ``grad_reduce_in_fp32`` (verl PR #7485) and the Muon layer-wise layout rule."""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .dtypes import FP32, accepted_spellings, dtype_name
from .errors import ConstraintError, FieldTypeError
from .optimizer_reader import check_optimizer_config, reader_of

GRAD_REDUCE = "grad_reduce_in_fp32"
GRAD_REDUCE_ALIASES = (GRAD_REDUCE, "accumulate_allreduce_grads_in_fp32")
LAYER_WISE_LAYOUT = "use_layer_wise_param_layout"
FP32_LOCAL_PATTERNS = "param_name_patterns_for_fp32_local_accumulation"
MUON_ALGORITHMS = ("muon",)
_MISSING = object()

RULE_FP32_DEFAULT = "fp32-by-default: a conventional optimizer expects FP32 grads (verl #7485)"
RULE_PAO_LOW_PRECISION = "precision-aware optimizer with main_grads_dtype={dtype}: reduce in that precision"
RULE_FP32_LOCAL = ("param_name_patterns_for_fp32_local_accumulation is set: Megatron (0.17+) requires "
                   "grad_reduce_in_fp32=False with it")
RULE_MUON_LAYOUT = "muon with use_layer_wise_distributed_optimizer: LayerWiseDistributedOptimizer needs this layout"
RULE_FOLLOW_LAYOUT = ("the optimizer config carries use_layer_wise_param_layout: DDP's must match it (the layer-wise "
                      "optimizer reads its own copy, the DDP buffers read DDP's)")


def main_grads_dtype(optimizer_config) -> str:
    raw = reader_of(optimizer_config).get("main_grads_dtype", FP32)
    name = dtype_name(FP32 if raw is None else raw)
    if name is None:
        raise FieldTypeError("optimizer_config.main_grads_dtype", raw,
                             f"a torch.dtype or one of {accepted_spellings()}")
    return name


def is_muon_layer_wise(optimizer_config) -> bool:
    reader = reader_of(optimizer_config)
    algorithm = str(reader.get("optimizer", "") or "").lower()
    return algorithm in MUON_ALGORITHMS and bool(reader.get("use_layer_wise_distributed_optimizer", False))


def injections(explicit: Mapping, optimizer_config: object) -> list[tuple[str, object, str]]:
    """(field, value, rule) the resolver adds, given the user's explicit canonical values.

    When the optimizer config carries ``use_layer_wise_param_layout`` itself (Megatron-LM dev), DDP follows that
    value (the cross rule layer-wise-param-layout-agrees); True is injected for Muon only when it does not.
    """
    reader = reader_of(optimizer_config)
    if not reader.present:
        return []
    out = []
    grads_dtype = main_grads_dtype(reader)  # validated even when an explicit value wins
    if GRAD_REDUCE not in explicit:
        if explicit.get(FP32_LOCAL_PATTERNS):
            out.append((GRAD_REDUCE, False, RULE_FP32_LOCAL))
        elif bool(reader.get("use_precision_aware_optimizer", False)) and grads_dtype != FP32:
            out.append((GRAD_REDUCE, False, RULE_PAO_LOW_PRECISION.format(dtype=grads_dtype)))
        else:
            out.append((GRAD_REDUCE, True, RULE_FP32_DEFAULT))
    carried = reader.get(LAYER_WISE_LAYOUT, _MISSING)
    if carried is not _MISSING:
        if LAYER_WISE_LAYOUT not in explicit:
            out.append((LAYER_WISE_LAYOUT, carried, RULE_FOLLOW_LAYOUT))
        elif explicit[LAYER_WISE_LAYOUT] != carried:
            raise ConstraintError("layer-wise-param-layout-agrees", RULE_FOLLOW_LAYOUT,
                                  {f"ddp.{LAYER_WISE_LAYOUT}": explicit[LAYER_WISE_LAYOUT],
                                   f"optimizer.{LAYER_WISE_LAYOUT}": carried}, "any")
    elif is_muon_layer_wise(reader) and LAYER_WISE_LAYOUT not in explicit:
        out.append((LAYER_WISE_LAYOUT, True, RULE_MUON_LAYOUT))
    return out


def resolve_ddp_overrides(override_ddp_config: Mapping[str, Any] | None, optimizer_config: Any) -> dict[str, Any]:
    """Drop-in for verl's ``MegatronEngine._resolve_override_ddp_config``: the overrides plus what the rules add.

    An explicit ``grad_reduce_in_fp32`` (or its old name) always wins; with no optimizer nothing is injected.
    """
    check_optimizer_config(optimizer_config)
    if override_ddp_config is not None and not isinstance(override_ddp_config, Mapping):
        raise FieldTypeError("override_ddp_config", override_ddp_config, "a mapping of DDPConfig fields or None")
    overrides = dict(override_ddp_config or {})
    explicit = dict(overrides)
    if any(alias in overrides for alias in GRAD_REDUCE_ALIASES):
        explicit[GRAD_REDUCE] = True  # presence is what matters here
    for name, value, _rule in injections(explicit, optimizer_config):
        overrides.setdefault(name, value)
    return overrides
