"""Where a multi-rank test's ranks come from: torchrun (or srun + torchrun), or the test's own fork/spawn.

Under ``torchrun`` every process is one rank and learns who it is from the environment (``RANK``, ``WORLD_SIZE``,
``LOCAL_RANK``, ``MASTER_ADDR``/``MASTER_PORT``): it joins with ``init_method="env://"``, as Megatron-LM's and
Megatron-Bridge's own multi-GPU tests do (``torchrun --nproc_per_node=8 -m pytest ...``). Without those variables
the harnesses start their ranks themselves and rendezvous through a ``file://`` store in a temp dir (no ports).
Stdlib only: the launchers import neither torch nor megatron.
"""
from __future__ import annotations

import json
import os
from dataclasses import dataclass

TORCHRUN_VARS = ("RANK", "WORLD_SIZE", "LOCAL_RANK", "MASTER_ADDR", "MASTER_PORT")


@dataclass(frozen=True)
class TorchrunRank:
    rank: int
    world_size: int
    local_rank: int
    init_method: str = "env://"


def torchrun_rank(environ=None) -> TorchrunRank | None:
    """This process's rank when a launcher such as torchrun started it, else None. A partial set of the variables
    is an error (a half-configured launch would otherwise fork a second set of ranks)."""
    env = os.environ if environ is None else environ
    present = [name for name in TORCHRUN_VARS if name in env]
    if not present:
        return None
    missing = [name for name in TORCHRUN_VARS if name not in env]
    if missing:
        raise RuntimeError(f"launched with {', '.join(present)} but without {', '.join(missing)}: start the ranks "
                           "with torchrun (it sets all of them) or set none of them")
    try:
        rank, world_size, local_rank = int(env["RANK"]), int(env["WORLD_SIZE"]), int(env["LOCAL_RANK"])
    except ValueError as exc:
        raise RuntimeError(f"RANK/WORLD_SIZE/LOCAL_RANK must be integers: {exc}") from exc
    if not 0 <= rank < world_size or local_rank < 0:
        raise RuntimeError(f"RANK={rank}, WORLD_SIZE={world_size}, LOCAL_RANK={local_rank} do not describe a rank")
    return TorchrunRank(rank, world_size, local_rank)


def rank_device(backend: str, local_rank: int):
    """The rank's device: its GPU (``LOCAL_RANK`` modulo the GPUs present) for nccl, else the CPU."""
    import torch

    if backend == "nccl":
        torch.cuda.set_device(local_rank % torch.cuda.device_count())
        return torch.device("cuda", torch.cuda.current_device())
    return torch.device("cpu")


def finish_rank(result: dict, out_dir: str) -> None:
    """End a rank started by a harness: its result as ``out_dir/rank<r>.json`` (atomically), leave the process group
    in step with the peers when it did not fail, then exit hard: a crashed rank leaves its peer waiting in a
    collective, and the harness only has to kill that peer, not unwind half-torn-down distributed state."""
    try:
        tmp = os.path.join(out_dir, f"rank{result['rank']}.json.tmp")
        with open(tmp, "w", encoding="utf-8") as fh:
            json.dump(result, fh, default=str)
        os.replace(tmp, os.path.join(out_dir, f"rank{result['rank']}.json"))
        import torch.distributed as dist

        if result.get("error") is None and dist.is_initialized():
            dist.barrier()
            dist.destroy_process_group()
    except Exception:
        pass
    import sys

    sys.stdout.flush()
    os._exit(0 if result.get("error") is None else 1)
