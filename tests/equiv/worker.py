"""One pin of the equivalence lane: train a tiny GPTModel N steps on every rank and record what it did.

    python tests/equiv/worker.py --plan PLAN.json --out-dir DIR [--backend gloo] [--world-size 2]
    torchrun --standalone --nproc_per_node=2 tests/equiv/worker.py --plan PLAN.json --out-dir DIR

Run with the pin's python and tools/lane_common.worker_env()'s PYTHONPATH (lane.py starts it so): the DDP harness
(tests/integration) and the checkpoint lane's patches (tests/ckpt) come after this folder, which a script has first
(tests/ckpt has a worker.py too). PLAN.json (written by lane.py, from the registry alone) holds the variants, each with the
overrides compat resolves and builds into TransformerConfig, OptimizerConfig and DistributedDataParallelConfig.
Without torchrun this launcher imports torch + megatron once and forks ``--world-size`` ranks (file:// store); under
torchrun every process is a rank (env:// rendezvous; compat/tooling/torchrun.py). Each rank writes
``DIR/rank<r>.json`` (records) and ``DIR/rank<r>-<variant>.pt`` (per step: every grad and parameter, by stable
name, for sizing a difference).

Per rank and variant: compat builds the three configs; GPTModel (local layer spec) in Float16Module, wrapped in
DistributedDataParallel; the initial weights come from ``init_weights`` (by stable name, identical on every pin);
``get_megatron_optimizer``; then N steps on token batches from a fixed seed (each DP rank its slice of the global
batch). Recorded per step: loss, grad norm, zeros in grads, a sha256 of every grad and parameter; once: the
buffers' and optimizer state's bytes, the built configs' values, the patches and the optimizer megatron bound.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
import traceback

from compat.tooling import torchrun as launch

PG_TIMEOUT_S = 120


# ----------------------------------------------------------------------------------------------- launcher
def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--plan", required=True)
    ap.add_argument("--out-dir", required=True)
    ap.add_argument("--backend", default="gloo", choices=("gloo", "nccl"))
    ap.add_argument("--world-size", type=int, default=2, help="ranks to fork (ignored under torchrun)")
    ap.add_argument("--timeout", type=float, default=float(os.environ.get("MCORE_COMPAT_EQUIV_TIMEOUT", "300")))
    args = ap.parse_args(argv)
    with open(args.plan, encoding="utf-8") as fh:
        plan = json.load(fh)
    os.makedirs(args.out_dir, exist_ok=True)
    here = launch.torchrun_rank()
    if here is not None:
        _rank(here.rank, here.world_size, here.local_rank, args.backend, here.init_method, plan, args.out_dir)
        return 0  # not reached: _rank exits
    return _fork_ranks(plan, args)


def _fork_ranks(plan, args) -> int:
    """Import torch + megatron here once, then fork the ranks (they inherit it); spawn for nccl (CUDA)."""
    import multiprocessing as mp

    if args.backend == "gloo":
        _prepare_process("gloo")
        method = "fork"
    else:
        method = "spawn"
    ctx = mp.get_context(method)
    with tempfile.TemporaryDirectory(prefix="mcore_equiv_") as tmp:
        init = "file://" + os.path.join(tmp, "store")
        procs = [ctx.Process(target=_rank, name=f"equiv-rank{r}",
                             args=(r, args.world_size, r, args.backend, init, plan, args.out_dir))
                 for r in range(args.world_size)]
        for p in procs:
            p.start()
        deadline = time.monotonic() + args.timeout
        for p in procs:
            p.join(max(0.0, deadline - time.monotonic()))
        hung = [r for r, p in enumerate(procs) if p.is_alive()]
        for r in hung:
            procs[r].kill()
            procs[r].join(10)
    if hung:
        print(f"equivalence worker: ranks {hung} still ran after {args.timeout:.0f} s and were killed", file=sys.stderr)
    return 0 if not hung and all(p.exitcode == 0 for p in procs) else 1


_PREPARED: list[str] = []


def _prepare_process(backend: str) -> list[str]:
    """What must happen before megatron is imported (once per process): the FusedAdam emulation on a host without
    Apex/TE (tests/ckpt/fused_adam.py: megatron's production optimizer path), then the model's imports."""
    if _PREPARED:
        return list(_PREPARED)
    if backend != "nccl":
        os.environ["CUDA_VISIBLE_DEVICES"] = ""
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    import torch

    torch.set_num_threads(1)
    import lane_patches

    _PREPARED.extend(lane_patches.before_megatron() or ["none"])
    import megatron.core.models.gpt.gpt_model  # noqa: F401
    import megatron.core.optimizer  # noqa: F401

    return list(_PREPARED)


# --------------------------------------------------------------------------------------------------- rank
def _rank(rank, world_size, local_rank, backend, init, plan, out_dir):
    os.environ["MCORE_COMPAT_WORKER"] = "1"  # cpu_patches.apply refuses to run elsewhere
    result = {"rank": rank, "world_size": world_size, "backend": backend, "init_method": init.split(":")[0],
              "error": None, "variants": {}}
    t_start = time.perf_counter()
    try:
        import datetime

        patches = [p for p in _prepare_process(backend) if p != "none"]
        import lane_patches
        import torch

        from compat.version import installed_version

        version = installed_version()
        result.update(torch_version=torch.__version__, megatron_version=version)
        device = launch.rank_device(backend, local_rank)
        if backend == "gloo":
            from compat.tooling import cpu_patches

            patches += cpu_patches.apply(version)
            patches += cpu_rng_tracker()
        if "emulate_fused_adam" in patches:  # its stand-in apex package misleads the local spec on GPU hosts too
            patches += local_norm_without_apex()
        patches += lane_patches.after_megatron(backend, emulating="emulate_fused_adam" in patches)
        result["patches"] = patches
        result["emulation"] = lane_patches.emulation_in_effect()
        torch.distributed.init_process_group(backend, init_method=init, rank=rank, world_size=world_size,
                                             timeout=datetime.timedelta(seconds=PG_TIMEOUT_S))
        result["import_and_init_s"] = round(time.perf_counter() - t_start, 3)
        import train

        for variant in plan["variants"]:
            t0 = time.perf_counter()
            rec, tensors = train.run_variant(variant, plan, rank, world_size, device)
            rec["wall_s"] = round(time.perf_counter() - t0, 3)
            result["variants"][variant["id"]] = rec
            torch.save(tensors, os.path.join(out_dir, f"rank{rank}-{variant['id']}.pt"))
    except BaseException:
        result["error"] = traceback.format_exc()
    result["total_s"] = round(time.perf_counter() - t_start, 3)
    launch.finish_rank(result, out_dir)


def cpu_rng_tracker() -> list[str]:
    """megatron's CUDA RNG state tracker (entered by every attention forward and by model_parallel_cuda_manual_seed)
    reads and sets the CUDA generator; on a CPU host it reads and sets the CPU one instead
    (shared/research/equivalence_probe/README.md). Dropout is 0 in the lane's config, so no value depends on it."""
    import megatron.core.tensor_parallel.random as rnd
    import torch

    torch.cuda.get_rng_state = lambda *a, **k: torch.get_rng_state()
    torch.cuda.random.get_rng_state = lambda *a, **k: torch.get_rng_state()
    torch.cuda.manual_seed = lambda seed: None
    rnd._set_cuda_rng_state = lambda state, *a, **k: torch.set_rng_state(state)
    rnd._get_cuda_rng_state = lambda *a, **k: torch.get_rng_state()
    return ["cpu_rng_tracker"]


def local_norm_without_apex() -> list[str]:
    """The FusedAdam emulation installs a stand-in ``apex`` package, so the local layer spec's ``import apex``
    succeeds and it picks Apex's FusedLayerNorm, which then raises "Apex must be installed". Bind what the spec
    binds without Apex (WrappedTorchNorm, WrappedTorchLayerNorm before 0.11) wherever a module bound FusedLayerNorm,
    when Apex's kernels are absent."""
    import importlib
    import importlib.util

    if importlib.util.find_spec("apex.normalization") is not None:
        return []
    fallback = None
    for module, name in (("megatron.core.transformer.torch_norm", "WrappedTorchNorm"),
                         ("megatron.core.transformer.torch_layer_norm", "WrappedTorchLayerNorm")):
        try:
            fallback = getattr(importlib.import_module(module), name)
            break
        except (ImportError, AttributeError):
            continue
    from megatron.core.fusions.fused_layer_norm import FusedLayerNorm

    for name in ("megatron.core.models.gpt.gpt_layer_specs", "megatron.core.transformer.transformer_block"):
        importlib.import_module(name)  # the modules that bind a norm class at import: loaded before the scan
    rebound = []
    for module_name, module in list(sys.modules.items()):  # LNImpl, LayerNormImpl, ... in every module binding it
        if not module_name.startswith("megatron") or module is None or module_name.endswith("fused_layer_norm"):
            continue
        for attr, value in list(vars(module).items()):
            if value is FusedLayerNorm and fallback is not None:
                setattr(module, attr, fallback)
                rebound.append(f"{module_name}.{attr}")
    return ["local_norm_without_apex"] if rebound else []


if __name__ == "__main__":
    sys.exit(main())
