"""TransformerConfig kwargs built the way Megatron-LM builds them: its own argument parser with its defaults,
``validate_args``, then ``core_transformer_config_from_args`` (on pins whose wheel ships ``megatron.training``,
0.17.0+). The arguments are real launch scripts' (``data/launch_args.json``). Shared by the contract test and
``benchmarks/argparse_configs.py``."""
import argparse
import contextlib
import copy
import functools
import importlib.util
import io
import json
import math
import os
import typing
from pathlib import Path

LAUNCH = json.loads((Path(__file__).parent / "data" / "launch_args.json").read_text())
# what a launch script gets from its launcher or data flags; a script's own value comes later and wins
BASE_ARGV = ["--seq-length", "4096", "--max-position-embeddings", "4096", "--micro-batch-size", "1"]
_PARALLEL = ("tensor_model_parallel_size", "pipeline_model_parallel_size", "context_parallel_size",
             "expert_model_parallel_size")


def has_training() -> bool:
    return importlib.util.find_spec("megatron.training") is not None


def _arguments_module():
    if not hasattr(typing, "override"):  # megatron.training 0.19 imports typing.override (Python 3.12)
        import typing_extensions

        typing.override = typing_extensions.override
    from megatron.training import arguments

    return arguments


@functools.cache
def _megatron_parser() -> argparse.ArgumentParser:
    """Megatron's parser with every argument, built once per process (each build reads the source of its argument
    dataclasses for their help texts: about 0.1 s, 4 s over the launch scripts)."""
    return _arguments_module().add_megatron_arguments(argparse.ArgumentParser(allow_abbrev=False))


def config_kwargs_from_args(argv: list[str]) -> tuple[str, dict]:
    """(config key, kwargs) that ``core_transformer_config_from_args`` passes to the config class. Raises what
    Megatron's parser or ``validate_args`` raise (the script is then not a config this release builds).

    ``validate_args`` asks the GPU for its compute capability (grouped GEMM, CUDA_DEVICE_MAX_CONNECTIONS); on this
    CPU host it is answered as a Hopper GPU (9.0), the hardware these scripts are written for."""
    import torch
    from megatron.core.transformer import MLATransformerConfig, TransformerConfig

    os.environ.setdefault("CUDA_DEVICE_MAX_CONNECTIONS", "1")  # every tensor-parallel launch script exports it
    A = _arguments_module()
    parser = copy.deepcopy(_megatron_parser())  # a copy: a list default that validate_args edits stays this script's
    captured = {}

    def record(self, **kwargs):
        captured.update(kwargs)
        captured["__config__"] = "mla" if isinstance(self, MLATransformerConfig) else "transformer"

    saved = {"capability": torch.cuda.get_device_capability, "arch": getattr(A, "get_device_arch_version", None),
             "inits": (TransformerConfig.__dict__["__init__"], MLATransformerConfig.__dict__["__init__"])}
    torch.cuda.get_device_capability = lambda *a, **k: (9, 0)
    if saved["arch"] is not None:
        A.get_device_arch_version = lambda: 9
    try:
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
            args, _unknown = parser.parse_known_args(BASE_ARGV + argv)
            args.rank = 0
            args.world_size = math.prod(getattr(args, n) or 1 for n in _PARALLEL)
            A.validate_args(args)
            TransformerConfig.__init__ = MLATransformerConfig.__init__ = record
            A.core_transformer_config_from_args(args)
    finally:
        torch.cuda.get_device_capability = saved["capability"]
        if saved["arch"] is not None:
            A.get_device_arch_version = saved["arch"]
        TransformerConfig.__init__, MLATransformerConfig.__init__ = saved["inits"]
    return captured.pop("__config__"), captured


__all__ = ["LAUNCH", "config_kwargs_from_args", "has_training"]
