# SPDX-License-Identifier: Apache-2.0
"""One rank of a ``gloo_world`` launch (compat.tooling.pytest_gloo): ``torchrun ... -m compat.tooling.gloo_rank SPEC``.

In the rank: MCORE_COMPAT_WORKER=1, no GPUs visible, one thread; our CPU patches for the installed megatron-core
(compat.tooling.cpu_patches, when megatron-core is installed and the spec asks for them), then
``init_process_group("gloo", init_method="env://")`` from torchrun's variables, then the host's function
``module:qualname`` with the spec's arguments. Its return value (JSON; anything else by ``str()``) or the traceback is
written as ``OUT/rank<r>.json`` and the rank leaves the group in step with its peers (torchrun.finish_rank).
"""
from __future__ import annotations

import importlib
import json
import os
import sys
import time
import traceback
from datetime import timedelta
from typing import Any

from .torchrun import finish_rank, torchrun_rank


def resolve(target: str) -> Any:
    """The object named ``module:qualname``."""
    module_name, _, qualname = target.partition(":")
    obj: Any = importlib.import_module(module_name)
    for part in qualname.split("."):
        obj = getattr(obj, part)
    return obj


def run(spec: dict) -> dict:
    """This rank's result dict: rank, world_size, patches, megatron_version, value or error, seconds."""
    here = torchrun_rank()
    if here is None:
        raise SystemExit("compat.tooling.gloo_rank runs under torchrun (RANK, WORLD_SIZE, ... are not set)")
    os.environ["MCORE_COMPAT_WORKER"] = "1"  # cpu_patches.apply refuses to run elsewhere
    os.environ["CUDA_VISIBLE_DEVICES"] = ""
    result: dict = {"rank": here.rank, "world_size": here.world_size, "patches": [], "error": None}
    t0 = time.perf_counter()
    try:
        import torch
        import torch.distributed as dist

        torch.set_num_threads(1)
        from ..version import installed_version

        version = installed_version()
        result["megatron_version"] = version
        if spec.get("patches", True) and version is not None:
            from . import cpu_patches

            result["patches"] = cpu_patches.apply(version)
        dist.init_process_group("gloo", init_method=here.init_method, rank=here.rank, world_size=here.world_size,
                                timeout=timedelta(seconds=float(spec.get("timeout", 300))))
        fn = resolve(spec["target"])
        result["value"] = fn(*spec.get("args", []), **spec.get("kwargs", {}))
    except BaseException:
        result["error"] = traceback.format_exc()
    result["seconds"] = time.perf_counter() - t0
    return result


def main(argv: list[str] | None = None) -> None:
    argv = sys.argv[1:] if argv is None else argv
    with open(argv[0], encoding="utf-8") as fh:
        spec = json.load(fh)
    finish_rank(run(spec), spec["out_dir"])


if __name__ == "__main__":
    main()
