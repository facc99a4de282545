"""One side of a checkpoint-lane pair, run with one pin's lane venv and tools/lane_common.worker_env()'s PYTHONPATH
(tests/integration for the DDP harness; lane.py starts it so):

    python tests/ckpt/worker.py save --ckpt DIR --out SAVE.json [--backend gloo]
    python tests/ckpt/worker.py load --ckpt DIR --out LOAD.json --plan SAVE.json [--backend gloo]
    torchrun --standalone --nproc_per_node=2 tests/ckpt/worker.py save ... --rank-dir D   (each process a rank)
    python tests/ckpt/worker.py save ... --out SAVE.json --collect D       (the report from D's rank files)

The launcher (this process) imports neither torch nor megatron. It spawns the ranks once per side; every rank
runs every variant, so the ~3 s import is paid once per side, not per variant. Ranks rendezvous through a
FileStore (no ports). The launcher waits with a deadline, kills a hung rank's whole process tree, kills and
records any process left behind, and writes one JSON report (atomically).

In each rank: patches (lane_patches, cpu_patches on gloo), then per variant the DDP harness's model (bf16 3x
Linear(64,64) MegatronModule, DDP with the resolver's grad_reduce_in_fp32=True) and ``get_megatron_optimizer``.
save: 2 steps, snapshot, ``dist_checkpointing.save``, a 3rd step, snapshot. load: a fresh model, the load
template, snapshot, ``dist_checkpointing.load``, snapshot, the 3rd step, snapshot; then the negative control
(template built with ``is_loading=False``), snapshot. Snapshots are compare.py's rank pieces.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import struct
import sys
import tempfile
import time
import traceback

WORLD_SIZE = 2
SAVE_STEPS = 2  # steps before the save; the reference continuation is step SAVE_STEPS + 1
PG_TIMEOUT_S = 60  # a collective a peer never joins raises after this, instead of hanging
NOT_APPLICABLE = {"fsdp_dtensor": "Megatron-FSDP only (use_megatron_fsdp); the lane's model uses DDP"}


# ----------------------------------------------------------------------------------------------- launcher
def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("side", choices=("save", "load"))
    ap.add_argument("--ckpt", required=True, help="checkpoint root: one sub-directory per variant")
    ap.add_argument("--out", required=True, help="the side's JSON report")
    ap.add_argument("--plan", help="load: the save side's report (which variants were saved, and how)")
    ap.add_argument("--backend", default="gloo", choices=("gloo", "nccl"))
    ap.add_argument("--world-size", type=int, default=WORLD_SIZE)
    ap.add_argument("--timeout", type=float, default=float(os.environ.get("MCORE_COMPAT_CKPT_TIMEOUT", "300")))
    ap.add_argument("--only", help="save: comma-separated variant ids to run (default: all)")
    ap.add_argument("--rank-dir", help="under torchrun: where each rank writes rank<r>.json (then --collect it)")
    ap.add_argument("--collect", metavar="DIR", help="write --out from a torchrun run's rank files in DIR")
    args = ap.parse_args(argv)
    plan = None
    if args.side == "load":
        if not args.plan:
            ap.error("load needs --plan")
        with open(args.plan, encoding="utf-8") as fh:
            plan = json.load(fh)["plan"]
    only = args.only.split(",") if args.only else None
    if args.backend == "nccl":  # one GPU per rank: min(2, GPUs), as tests/integration/test_ddp_nccl.py does
        args.world_size = min(args.world_size, _cuda_device_count())
        if args.world_size < 1:
            ap.error("--backend nccl needs a CUDA device; torch.cuda.device_count() is 0")
    from compat.tooling import torchrun as launch

    here = launch.torchrun_rank()
    if here is not None:  # this process is one rank of a torchrun launch (env:// rendezvous)
        if not args.rank_dir:
            ap.error("under torchrun, give --rank-dir (and --collect it once torchrun returns)")
        os.makedirs(args.rank_dir, exist_ok=True)
        _rank(here.rank, here.world_size, args.backend, here.init_method, args.side, args.ckpt, plan, args.rank_dir,
              only, local_rank=here.local_rank)
    if args.collect:
        report = side_report(args.side, args.collect, backend=args.backend, world_size=args.world_size, killed=[],
                             left=[], wall_s=0.0, why_missing="torchrun's rank wrote no report")
        report["launcher"] = "torchrun"
    else:
        report = run_side(args.side, args.ckpt, plan, backend=args.backend, world_size=args.world_size,
                          timeout=args.timeout, only=only)
    tmp = f"{args.out}.tmp"
    with open(tmp, "w", encoding="utf-8") as fh:
        json.dump(report, fh)
    os.replace(tmp, args.out)
    return 0


def _cuda_device_count() -> int:
    import subprocess

    code = "import torch; print(torch.cuda.device_count() if torch.cuda.is_available() else 0)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300, check=False)
    try:
        return int(out.stdout.strip().splitlines()[-1])
    except (IndexError, ValueError):
        return 0


def run_side(side, ckpt_root, plan, *, backend, world_size, timeout, only=None) -> dict:
    import multiprocessing as mp

    import psutil  # a lane dependency: without it megatron's forked writers hang (lane_patches.py)

    ctx = mp.get_context("spawn")
    _become_subreaper()
    t0 = time.monotonic()
    with tempfile.TemporaryDirectory(prefix=f"mcore_ckpt_{side}_") as tmp:
        init = "file://" + os.path.join(tmp, "store")
        procs = [ctx.Process(target=_rank, name=f"ckpt-{side}-rank{r}",
                             args=(r, world_size, backend, init, side, ckpt_root, plan, tmp, only))
                 for r in range(world_size)]
        for p in procs:
            p.start()
        deadline = time.monotonic() + timeout
        for p in procs:
            p.join(max(0.0, deadline - time.monotonic()))
        killed = []
        for rank, p in enumerate(procs):
            if p.is_alive():  # hung: its Manager and writer forks keep pipes open, so kill the whole tree
                _kill_tree(psutil, p.pid)
                p.join(10)
                killed.append(rank)
        left = _reap_children(psutil)
        why = {rank: f"killed after the {timeout:.0f} s timeout" if rank in killed else f"exit code {p.exitcode}"
               for rank, p in enumerate(procs)}
        return side_report(side, tmp, backend=backend, world_size=world_size, killed=killed, left=left,
                           wall_s=round(time.monotonic() - t0, 3), why_missing=why)


def side_report(side, rank_dir, *, backend, world_size, killed, left, wall_s, why_missing) -> dict:
    """The side's report from the ranks' rank<r>.json files (forked ranks, or a torchrun launch)."""
    ranks = []
    for rank in range(world_size):
        path = os.path.join(rank_dir, f"rank{rank}.json")
        if os.path.exists(path):
            with open(path, encoding="utf-8") as fh:
                ranks.append(json.load(fh))
        else:
            why = why_missing.get(rank) if isinstance(why_missing, dict) else why_missing
            ranks.append({"rank": rank, "error": f"rank {rank} wrote no report ({why})"})
    out = {"side": side, "backend": backend, "world_size": world_size, "ranks": ranks, "killed": killed,
           "left_behind": left, "wall_s": wall_s}
    if side == "save":
        out["plan"] = (ranks[0].get("plan") if ranks else None) or []
    return out


def _become_subreaper() -> None:
    """Orphans of a rank (its dist_checkpointing Manager, a writer fork) are re-parented to this launcher instead of
    init, so that _reap_children sees them (Linux; elsewhere the lane's process-group check still does)."""
    import ctypes

    try:
        ctypes.CDLL(None, use_errno=True).prctl(36, 1, 0, 0, 0)  # PR_SET_CHILD_SUBREAPER
    except (OSError, AttributeError):
        pass


def _kill_tree(psutil, pid: int) -> None:
    try:
        root = psutil.Process(pid)
        family = root.children(recursive=True) + [root]
    except psutil.NoSuchProcess:
        return
    for proc in family:
        try:
            proc.kill()
        except psutil.NoSuchProcess:
            pass
    psutil.wait_procs(family, timeout=10)


def _reap_children(psutil) -> list[dict]:
    """Processes still below the launcher once its ranks are gone (multiprocessing's own resource tracker,
    which exits with the launcher, excepted): recorded, then killed."""
    left = []
    for _ in range(20):  # writers and Managers of a rank that just exited may take a moment to go
        left = [c for c in psutil.Process().children(recursive=True) if not _is_resource_tracker(psutil, c)]
        if not left:
            return []
        time.sleep(0.25)
    found = []
    for proc in left:
        try:
            found.append({"pid": proc.pid, "name": proc.name(), "cmdline": " ".join(proc.cmdline())[:200]})
            proc.kill()
        except psutil.NoSuchProcess:
            pass
    return found


def _is_resource_tracker(psutil, proc) -> bool:
    try:
        return "resource_tracker" in " ".join(proc.cmdline())
    except psutil.NoSuchProcess:
        return True


# --------------------------------------------------------------------------------------------------- rank
def _rank(rank, world_size, backend, init, side, ckpt_root, plan, out_dir, only=None, local_rank=None):
    os.environ["MCORE_COMPAT_WORKER"] = "1"  # cpu_patches.apply refuses to run elsewhere
    if backend != "nccl":
        os.environ["CUDA_VISIBLE_DEVICES"] = ""
    result = {"rank": rank, "side": side, "backend": backend, "error": None, "variants": {}}
    t_start = time.perf_counter()
    try:
        import datetime

        import torch

        torch.set_num_threads(1)
        result["torch_version"] = torch.__version__
        import lane_patches

        patches = lane_patches.before_megatron()
        from compat.version import installed_version

        version = installed_version()
        result["megatron_version"] = version
        from compat.tooling import torchrun as launch

        device = launch.rank_device(backend, rank if local_rank is None else local_rank)
        if backend != "nccl":
            from compat.tooling import cpu_patches

            patches += cpu_patches.apply(version)
        patches += lane_patches.after_megatron(backend, emulating="emulate_fused_adam" in patches)
        result["patches"] = patches
        result["emulation"] = lane_patches.emulation_in_effect()
        torch.distributed.init_process_group(backend, init_method=init, rank=rank, world_size=world_size,
                                             timeout=datetime.timedelta(seconds=PG_TIMEOUT_S))
        from megatron.core import parallel_state

        parallel_state.initialize_model_parallel(1, 1)
        result["import_and_init_s"] = round(time.perf_counter() - t_start, 3)
        if side == "save":
            plan = [v for v in variant_plan() if only is None or v["id"] in only]
            result["plan"] = plan
        for variant in plan:
            run = save_variant if side == "save" else load_variant
            result["variants"][variant["id"]] = run(variant, ckpt_root, rank, device)
            _resync(variant["id"])  # raises when a variant left the process group broken: later ones do not run
    except BaseException:
        result["error"] = traceback.format_exc()
    finally:
        result["children_reaped"] = _reap_own_children()
        result["total_s"] = round(time.perf_counter() - t_start, 3)
    from compat.tooling import torchrun as launch

    launch.finish_rank(result, out_dir)


def _reap_own_children() -> list[str]:
    """dist_checkpointing's first save starts a multiprocessing Manager that outlives the save; end it (and
    anything else this rank started) so that nothing is left behind."""
    import multiprocessing as mp

    names = []
    for child in mp.active_children():
        names.append(child.name)
        child.kill()
        child.join(5)
    return names


def _resync(after: str):
    """After a variant (failed or not), line the ranks up again before the next one."""
    import torch.distributed as dist

    try:
        dist.barrier()
    except Exception as exc:
        raise RuntimeError(f"the ranks could not line up after variant {after!r} (a peer failed or hung in a "
                           f"collective); the variants after it did not run: {exc}") from exc


def variant_plan() -> list[dict]:
    """plain optimizer, the API default, and every sharding type this release's DistributedOptimizer names."""
    import inspect

    from megatron.core.optimizer.distrib_optimizer import DistributedOptimizer

    source = inspect.getsource(DistributedOptimizer.sharded_state_dict)
    types = sorted(set(re.findall(r"sharding_type\s*==\s*['\"](\w+)['\"]", source)))
    plan = [{"id": "plain", "distopt": False, "sharding_type": None},
            {"id": "default", "distopt": True, "sharding_type": None}]
    plan += [{"id": t, "distopt": True, "sharding_type": t} for t in types if t not in NOT_APPLICABLE]
    return plan


def _kwargs_for(fn, metadata, sharding_type) -> dict:
    """How this release takes the sharding type: ``metadata=`` (0.13.1+) or ``sharding_type=`` (older)."""
    import inspect

    params = inspect.signature(fn).parameters
    if metadata is not None and "metadata" in params:
        return {"metadata": metadata}
    if sharding_type is not None and "sharding_type" in params:
        return {"sharding_type": sharding_type}
    return {}


def _inner(opt):
    """The one MegatronOptimizer inside get_megatron_optimizer's ChainedOptimizer (or the optimizer itself)."""
    import ddp_harness

    return ddp_harness._inner_optimizers(opt)[0]


def _opt_sharded_state_dict(opt, model_sd, *, is_loading, metadata, sharding_type):
    kwargs = _kwargs_for(_inner(opt).sharded_state_dict, metadata, sharding_type)
    return opt.sharded_state_dict(model_sd, is_loading=is_loading, **kwargs), sorted(kwargs)


def _build(distopt, device):
    import ddp_harness

    config = ddp_harness._transformer_config()
    case = {"id": "ckpt", "use_distributed_optimizer": distopt, "mode": "resolver"}
    model = ddp_harness._build_model(config, device)
    ddp = ddp_harness._wrap_ddp(config, ddp_harness.make_ddp_config(case), model)
    opt = ddp_harness._build_optimizer(ddp, distopt)
    return ddp, opt


def _train_step(ddp, opt, step, rank, device):
    import ddp_harness
    import torch

    if hasattr(ddp, "zero_grad_buffer"):
        ddp.zero_grad_buffer()
    opt.zero_grad()
    torch.manual_seed(1000 * step + rank)  # the same batch for step k in the saver and in the loader
    x = torch.randn(ddp_harness.SEQ, ddp_harness.HIDDEN, dtype=torch.bfloat16, device=device)
    ddp(x).float().pow(2).mean().backward()
    ddp.finish_grad_sync()
    result = opt.step()
    success = result[0] if isinstance(result, tuple) else result
    if not success:
        raise RuntimeError(f"optimizer.step() {step} reported failure")


def snapshot(ddp, opt) -> dict:
    """This rank's pieces of every parameter: bf16 weight, fp32 main param, exp_avg, exp_avg_sq and step."""
    mains = _main_params(opt)
    out = {}
    for name, p in ddp.module.named_parameters():
        entry = {"weight": _piece(p, 0, p.shape)}
        if id(p) in mains:
            main, offset, torch_opt = mains[id(p)]
            entry["main"] = _piece(main, offset, p.shape)
            state = torch_opt.state.get(main, {})
            for key in ("exp_avg", "exp_avg_sq"):
                if key in state:
                    entry[key] = _piece(state[key], offset, p.shape)
            step = _step_piece(torch_opt, main, state)
            if step is not None:
                entry["step"] = step
        out[name] = entry
    return out


def _main_params(opt) -> dict:
    """id(model param) -> (main param or its shard, offset in the flattened param, torch optimizer)."""
    import ddp_harness

    found = {}
    for inner in ddp_harness._inner_optimizers(opt):
        if hasattr(inner, "shard_fp32_from_float16_groups"):  # DistributedOptimizer: a shard per rank
            for models, mains in zip(inner.model_float16_groups, inner.shard_fp32_from_float16_groups):
                for p, main in zip(models, mains):
                    found[id(p)] = (main, inner._get_model_param_range_map(p)["param"].start, inner.optimizer)
        else:  # Float16OptimizerWithFloat16Params: the whole fp32 copy
            for models, mains in zip(inner.float16_groups, inner.fp32_from_float16_groups):
                for p, main in zip(models, mains):
                    found[id(p)] = (main, 0, inner.optimizer)
    return found


def _piece(t, offset, shape) -> dict:
    import torch
    from compare import piece

    flat = t.detach().to("cpu").contiguous().reshape(-1)
    raw = flat.view(torch.uint8).numpy().tobytes()
    return piece(str(flat.dtype).replace("torch.", ""), list(shape), raw, offset)


def _step_piece(torch_opt, main, state):
    """Apex/TE keep ``step`` in the param group (an int); torch's Adam keeps a tensor per param."""
    import torch
    from compare import piece

    for group in torch_opt.param_groups:
        if any(q is main for q in group["params"]) and "step" in group:
            step = group["step"]
            if isinstance(step, torch.Tensor):
                return _piece(step, 0, [])
            return piece("int64", [], struct.pack("<q", int(step)))
    if "step" in state:
        return _piece(torch.as_tensor(state["step"]), 0, [])
    return None


def _find(tree, key):
    """The first value of ``key`` anywhere in a nested dict/list (the optimizer's common state)."""
    if isinstance(tree, dict):
        if key in tree:
            return tree[key]
        values = tree.values()
    elif isinstance(tree, (list, tuple)):
        values = tree
    else:
        return None
    for value in values:
        found = _find(value, key)
        if found is not None:
            return found
    return None


def _error(stage, exc) -> dict:
    frames = traceback.extract_tb(exc.__traceback__)
    inner = next((f for f in reversed(frames) if "megatron" in f.filename or "torch" in f.filename), None)
    where = f"{os.path.basename(inner.filename)}:{inner.lineno} in {inner.name}" if inner else None
    text = f"{type(exc).__name__}: {exc}".strip()
    if not str(exc).strip() and inner:  # a bare assert: name the function it fired in
        text = f"{type(exc).__name__} in {os.path.basename(inner.filename)}:{inner.name}"
    return {"stage": stage, "error": text[:2000], "where": where, "traceback": traceback.format_exc()[-4000:]}


def _metadata(variant) -> dict | None:
    """What a variant saves as its content metadata (and passes as ``metadata=``); None for the API default."""
    if variant["id"] == "default":
        return None
    md = {"lane_variant": variant["id"]}
    if variant["sharding_type"]:
        md["distrib_optim_sharding_type"] = variant["sharding_type"]
    return md


def save_variant(variant, ckpt_root, rank, device) -> dict:
    import inspect

    import torch.distributed as dist
    from megatron.core import dist_checkpointing

    rec = {"id": variant["id"], "times": {}}
    stage = "build"
    try:
        ddp, opt = _build(variant["distopt"], device)
        rec["torch_optimizer"] = type(_inner(opt).optimizer).__name__
        stage = "train"
        for step in range(1, SAVE_STEPS + 1):
            _train_step(ddp, opt, step, rank, device)
        rec["saved"] = snapshot(ddp, opt)
        stage = "save"
        t0 = time.perf_counter()
        md = _metadata(variant)
        ckpt = os.path.join(ckpt_root, variant["id"])
        if rank == 0:
            os.makedirs(ckpt, exist_ok=True)  # dist_checkpointing.save needs it to exist
        dist.barrier()
        # 0.18+ add a ProcessGroup (`dp_cp_group`) to the metadata dict they are given, in place; Megatron-LM
        # hands each call its own metadata and saves a copy without it (_clean_metadata_for_serialization).
        model_sd = ddp.module.sharded_state_dict(**({"metadata": dict(md)} if md is not None else {}))  # unwrapped
        opt_sd, rec["optimizer_kwargs"] = _opt_sharded_state_dict(
            opt, model_sd, is_loading=False, metadata=None if md is None else dict(md),
            sharding_type=variant["sharding_type"])
        rec["common_sharding_type"] = _find(opt_sd, "param_state_sharding_type") if variant["distopt"] else None
        supports_content = "content_metadata" in inspect.signature(dist_checkpointing.save).parameters
        rec["content_metadata_supported"] = supports_content
        rec["content_metadata"] = md if supports_content else None
        kwargs = {"content_metadata": dict(md)} if supports_content and md is not None else {}
        # no strategy given: the release's default, torch_dist, on every pin
        dist_checkpointing.save({"model": model_sd, "optimizer": opt_sd}, ckpt, **kwargs)
        rec["times"]["save_s"] = round(time.perf_counter() - t0, 3)
        rec["children_after_save"] = _live_children()
        stage = "next step"
        _train_step(ddp, opt, SAVE_STEPS + 1, rank, device)
        rec["next"] = snapshot(ddp, opt)
    except Exception as exc:
        rec.update(_error(stage, exc))
    return rec


def _live_children() -> list[str]:
    import multiprocessing as mp

    return sorted(c.name for c in mp.active_children())


def _load_metadata(variant, ckpt) -> dict:
    """How the loader learns the format: ``load_content_metadata`` (0.13.1+), else, for a checkpoint without
    it, the sharding type the optimizer wrote into the common state (as a user of an older release passed the
    same flag to both sides). The API default variant passes nothing."""
    from megatron.core import dist_checkpointing

    info = {"content_metadata_supported": hasattr(dist_checkpointing, "load_content_metadata")}
    content = dist_checkpointing.load_content_metadata(ckpt) if info["content_metadata_supported"] else None
    info["content_metadata"] = None if content is None else dict(content)  # before megatron adds to it
    common = dist_checkpointing.load_common_state_dict(ckpt)
    info["common_sharding_type"] = _find(common.get("optimizer"), "param_state_sharding_type")
    if variant["id"] == "default":
        info["metadata"], info["metadata_source"] = content, "content_metadata" if content is not None else "none"
    elif content is not None:
        info["metadata"], info["metadata_source"] = content, "content_metadata"
    elif variant["distopt"] and info["common_sharding_type"]:
        info["metadata"] = {"distrib_optim_sharding_type": info["common_sharding_type"]}
        info["metadata_source"] = "common_state"
    else:
        info["metadata"], info["metadata_source"] = None, "none"
    return info


def _load_into(variant, ckpt, device, *, is_loading, md):
    from megatron.core import dist_checkpointing

    ddp, opt = _build(variant["distopt"], device)
    sharding_type = (md or {}).get("distrib_optim_sharding_type")
    model_sd = ddp.module.sharded_state_dict(**({"metadata": dict(md)} if md is not None else {}))
    opt_sd, _ = _opt_sharded_state_dict(opt, model_sd, is_loading=is_loading,
                                        metadata=None if md is None else dict(md), sharding_type=sharding_type)
    fresh = snapshot(ddp, opt)
    loaded = dist_checkpointing.load({"model": model_sd, "optimizer": opt_sd}, ckpt)
    ddp.load_state_dict(loaded["model"])
    opt.load_state_dict(loaded["optimizer"])
    return ddp, opt, fresh


def load_variant(variant, ckpt_root, rank, device) -> dict:
    rec = {"id": variant["id"], "times": {}}
    if not variant.get("saved", True):
        return {**rec, "skipped": "the save side did not save this variant"}
    ckpt = os.path.join(ckpt_root, variant["id"])
    stage = "metadata"
    try:
        info = _load_metadata(variant, ckpt)
        rec.update({f"loaded_{k}": v for k, v in info.items()})
        stage = "load"
        t0 = time.perf_counter()
        ddp, opt, rec["fresh"] = _load_into(variant, ckpt, device, is_loading=True, md=info["metadata"])
        rec["times"]["load_s"] = round(time.perf_counter() - t0, 3)
        rec["torch_optimizer"] = type(_inner(opt).optimizer).__name__
        rec["loaded"] = snapshot(ddp, opt)
        stage = "next step"
        _train_step(ddp, opt, SAVE_STEPS + 1, rank, device)
        rec["next"] = snapshot(ddp, opt)
    except Exception as exc:
        rec.update(_error(stage, exc))
        return rec
    try:  # negative control: the load template built as for a save (AReaL PR #1468)
        ddp, opt, _ = _load_into(variant, ckpt, device, is_loading=False, md=info["metadata"])
        rec["control"] = {"loaded": snapshot(ddp, opt)}
    except Exception as exc:
        rec["control"] = _error("control load", exc)
    return rec


if __name__ == "__main__":
    sys.exit(main())
