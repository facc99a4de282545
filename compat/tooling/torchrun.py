# SPDX-License-Identifier: Apache-2.0
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
import shlex
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


# ------------------------------------------------------------------------------------ launch commands
def torchrun_argv(nproc: int, program: list[str], *, python: str = "python", no_python: bool = False) -> list[str]:
    """``python -m torch.distributed.run --standalone --nproc_per_node=N [--no-python] PROGRAM...``: torchrun from
    the given interpreter (the venv's, not whatever ``torchrun`` is first on PATH), one node, N ranks."""
    if not isinstance(nproc, int) or isinstance(nproc, bool) or nproc < 1:
        raise ValueError(f"nproc={nproc!r} is not supported; supported: an int >= 1 (ranks on this node)")
    if not program:
        raise ValueError("program=[] is not supported; supported: a module (-m name ...) or a command to run")
    return [python, "-m", "torch.distributed.run", "--standalone", f"--nproc_per_node={nproc}",
            *(["--no-python"] if no_python else []), *program]


def visible_gpu_count(nvidia_smi_lines: list[str], environ: dict[str, str] | None = None) -> int:
    """GPUs this process may use: the ``GPU n:`` lines of ``nvidia-smi -L``, narrowed by CUDA_VISIBLE_DEVICES
    (a list of indices or UUIDs; empty: none) when it is set."""
    env = os.environ if environ is None else environ
    listed = [line for line in nvidia_smi_lines if line.strip().startswith("GPU ")]
    visible = env.get("CUDA_VISIBLE_DEVICES")
    if visible is None:
        return len(listed)
    wanted = [v.strip() for v in visible.split(",") if v.strip()]
    if any(v.startswith("-") for v in wanted):  # CUDA stops at the first invalid index
        wanted = wanted[:next(i for i, v in enumerate(wanted) if v.startswith("-"))]
    return min(len(wanted), len(listed))


def pytest_ranks_argv(nproc: int, pytest_args: list[str], junit_dir: str, *, python: str = "python") -> list[str]:
    """pytest in every rank of a torchrun launch, each writing ``junit_dir/junit-rank<RANK>.xml`` (one file per rank:
    a shared --junitxml would be written by all of them at once). torchrun's exit status fails when any rank fails."""
    script = f'exec "$0" -m pytest "$@" --junitxml={shlex.quote(junit_dir)}/junit-rank"$RANK".xml'
    return torchrun_argv(nproc, ["sh", "-c", script, python, *pytest_args], python=python, no_python=True)
