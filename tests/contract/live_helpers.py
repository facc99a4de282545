"""Shared by the contract tests: the live class of a config, base values, and a battery of valid configs."""
import importlib.util
from pathlib import Path

import pytest

import compat
from compat.build import megatron_class
from compat.configs import CONFIGS
from compat.registry import registry

BASE = {"transformer": {"num_layers": 2, "hidden_size": 64, "num_attention_heads": 4},
        "mla": {"num_layers": 2, "hidden_size": 64, "num_attention_heads": 4}}


def live_class(config):
    """The installed class. megatron.core.optimizer 0.7.0 imports apex at package import (absent on CPU hosts):
    then the real class is loaded from its installed file alone, without the package's __init__."""
    try:
        return megatron_class(config=config)
    except compat.MegatronNotInstalledError as exc:
        if "apex" not in str(exc):
            raise
    spec = CONFIGS[config]
    root = Path(importlib.util.find_spec("megatron.core").submodule_search_locations[0]).parents[1]
    loader = importlib.util.spec_from_file_location(f"_contract_{config}", root / spec.path)
    module = importlib.util.module_from_spec(loader)
    loader.loader.exec_module(module)
    return getattr(module, spec.class_name)


def setup(config, installed):
    reg = registry()
    assert installed in reg.releases, f"megatron-core {installed} is not in the registry"
    if not reg.has(installed, config=config):
        pytest.skip(f"megatron-core {installed} has no {config} class")
    return live_class(config), reg.schema(installed, config=config)


def battery(config, names):
    """Configs every release that has these fields accepts."""
    base = BASE.get(config, {})
    cases = [dict(base)]
    if config in ("transformer", "mla"):
        cases += [{**base, "bf16": True}, {**base, "fp16": True}, {**base, "num_query_groups": 2},
                  {**base, "ffn_hidden_size": 256, "kv_channels": 16},
                  {**base, "tensor_model_parallel_size": 2, "sequence_parallel": True},
                  {**base, "pipeline_model_parallel_size": 2, "pipeline_dtype": "bf16"},
                  {**base, "num_moe_experts": 4, "moe_router_topk": 2, "add_bias_linear": False},
                  {**base, "recompute_granularity": "full", "recompute_method": "uniform", "recompute_num_layers": 1},
                  {**base, "recompute_granularity": "selective"},
                  {**base, "layernorm_epsilon": 1e-6, "hidden_dropout": 0.0, "attention_dropout": 0.0}]
        if "num_layers_in_first_pipeline_stage" in names or "first_pipeline_num_layers" in names:
            cases.append({**base, "num_layers": 3, "pipeline_model_parallel_size": 2, "pipeline_dtype": "bf16",
                          "num_layers_in_first_pipeline_stage": 1})
    else:
        cases += [{"lr": 3e-4, "weight_decay": 0.1, "adam_eps": 1e-8, "clip_grad": 1.0},
                  {"bf16": True, "use_distributed_optimizer": True}, {"optimizer": "sgd", "sgd_momentum": 0.8}]
        if "muon_nesterov" in names or "muon_use_nesterov" in names:
            cases += [{"optimizer": "muon", "muon_nesterov": True}, {"optimizer": "muon", "muon_use_nesterov": True}]
        if "main_grads_dtype" in names:
            cases.append({"main_grads_dtype": "fp32", "exp_avg_dtype": "float32"})
    return cases


