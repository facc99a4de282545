"""What the checkpoint lane needs beyond compat/tooling/cpu_patches.py (applied in spawned ranks only).

==================  =========================================================================================
patch               why (seen failing without it; shared/research/ckpt_lane/README.md)
==================  =========================================================================================
emulate_fused_adam  every pin: put megatron on the Apex FusedAdam path (fused_adam.py says why and what it
                    covers). Installed before megatron is imported; 0.7.0's names are rebound after
                    cpu_patches installs its own apex stand-in. On a host with real Apex/TE: not applied.
cuda_synchronize    gloo, every pin that calls it: filesystem_async.preload_tensors calls
                    torch.cuda.synchronize() ("Torch not compiled with CUDA enabled"); a TorchFunctionMode does
                    not see it. A no-op on a host without CUDA.
np_product          numpy >= 2 lacks np.product, which dist_checkpointing <= 0.15 calls on its flattened_range
                    paths (mapping.py, validation.py, exchange_utils.py): alias np.prod where numpy lacks it
                    and megatron's source uses it.
==================  =========================================================================================
psutil is not a patch but a dependency of the lane venvs: without it the forked writer raises and its rank then
waits forever in count_queue.join().
"""
from __future__ import annotations

import importlib
import inspect
import os


def _wanted(name: str) -> bool:
    return name not in os.environ.get("MCORE_COMPAT_CPU_PATCHES_SKIP", "").split(",")


def before_megatron() -> list[str]:
    """Run before anything imports megatron (cpu_patches.apply imports megatron.core.optimizer)."""
    import fused_adam

    if _wanted("emulate_fused_adam") and fused_adam.install_as_apex():
        return ["emulate_fused_adam"]
    return []


def after_megatron(backend: str, emulating: bool) -> list[str]:
    import torch

    applied = []
    if emulating:
        import fused_adam

        if fused_adam.rebind_in_megatron():
            applied.append("emulate_fused_adam_rebind")
    if backend == "gloo" and _wanted("cuda_synchronize") and not torch.cuda.is_available():
        torch.cuda.synchronize = lambda device=None: None
        applied.append("cuda_synchronize")
    if _wanted("np_product") and _megatron_needs_np_product():
        import numpy as np

        np.product = np.prod
        applied.append("np_product")
    return applied


def _megatron_needs_np_product() -> bool:
    import numpy as np

    if hasattr(np, "product"):
        return False
    for name in ("mapping", "validation", "exchange_utils", "serialization", "utils"):
        try:
            module = importlib.import_module(f"megatron.core.dist_checkpointing.{name}")
        except ImportError:
            continue
        try:
            if "np.product" in inspect.getsource(module):
                return True
        except (OSError, TypeError):
            return True
    return False


def emulation_in_effect() -> dict:
    """What megatron bound as its Adam and the flags it derived (recorded with every run, and checked)."""
    import sys

    info = {}
    for name in ("megatron.core.optimizer", "megatron.core.optimizer.distrib_optimizer"):
        module = sys.modules.get(name)
        if module is None:
            continue
        adam = getattr(module, "Adam", None)
        info[name] = {"Adam": f"{getattr(adam, '__module__', '?')}.{getattr(adam, '__qualname__', adam)}"}
        for flag in ("HAVE_APEX_OR_TE", "USING_APEX_OPTIMIZER", "USING_TE_OPTIMIZER", "USING_PYTORCH_OPTIMIZER"):
            if hasattr(module, flag):
                info[name][flag] = getattr(module, flag)
    return info
