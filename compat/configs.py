# SPDX-License-Identifier: Apache-2.0
"""The Megatron config dataclasses mcore-compat knows: where each lives, what it inherits, how users name it."""
from __future__ import annotations

from dataclasses import dataclass

from .errors import InvalidValueError


@dataclass(frozen=True)
class ConfigClass:
    key: str  # what the API and the CLI call it: "ddp", "optimizer", "transformer", ...
    class_name: str
    path: str  # the file that defines the class, inside the package
    module: str  # where the live class is imported from
    parent: str | None = None  # the config it subclasses: its renames and cross rules apply here too


MODEL_PARALLEL_PATH = "megatron/core/model_parallel_config.py"
TRANSFORMER_PATH = "megatron/core/transformer/transformer_config.py"
OPTIMIZER_PATH = "megatron/core/optimizer/optimizer_config.py"
DDP_PATH = "megatron/core/distributed/distributed_data_parallel_config.py"

CONFIGS: dict[str, ConfigClass] = {c.key: c for c in (
    ConfigClass("ddp", "DistributedDataParallelConfig", DDP_PATH, "megatron.core.distributed"),
    ConfigClass("optimizer", "OptimizerConfig", OPTIMIZER_PATH, "megatron.core.optimizer.optimizer_config"),
    ConfigClass("adam_optimizer", "AdamOptimizerConfig", OPTIMIZER_PATH, "megatron.core.optimizer.optimizer_config",
                "optimizer"),
    ConfigClass("sgd_optimizer", "SGDOptimizerConfig", OPTIMIZER_PATH, "megatron.core.optimizer.optimizer_config",
                "optimizer"),
    ConfigClass("transformer", "TransformerConfig", TRANSFORMER_PATH, "megatron.core.transformer.transformer_config"),
    ConfigClass("mla", "MLATransformerConfig", TRANSFORMER_PATH, "megatron.core.transformer.transformer_config",
                "transformer"),
)}

# Base classes defined outside the file of the class that inherits them.
BASE_PATHS = {"ModelParallelConfig": MODEL_PARALLEL_PATH}
ALL_PATHS = (DDP_PATH, OPTIMIZER_PATH, MODEL_PARALLEL_PATH, TRANSFORMER_PATH)
ALIASES = {"DistributedDataParallelConfig": "ddp", "OptimizerConfig": "optimizer", "TransformerConfig": "transformer",
           "MLATransformerConfig": "mla", "AdamOptimizerConfig": "adam_optimizer",
           "SGDOptimizerConfig": "sgd_optimizer"}


def config_class(key: str) -> ConfigClass:
    """The config named ``key`` (a key such as "transformer" or a class name such as "TransformerConfig")."""
    if isinstance(key, str):
        found = CONFIGS.get(key) or CONFIGS.get(ALIASES.get(key, ""))
        if found is not None:
            return found
    raise InvalidValueError("config", key, f"must be one of {', '.join(CONFIGS)}")


def lineage(key: str) -> tuple[str, ...]:
    """``key`` and the configs it inherits from, nearest first: mla -> (mla, transformer)."""
    out = [key]
    while CONFIGS[out[-1]].parent:
        out.append(CONFIGS[out[-1]].parent)
    return tuple(out)


def path_of_class(class_name: str, default: str | None = None) -> str | None:
    """The file defining ``class_name`` (a config class or a known base)."""
    for c in CONFIGS.values():
        if c.class_name == class_name:
            return c.path
    return BASE_PATHS.get(class_name, default)
