"""Real megatron-core DistributedDataParallel + optimizer step in spawned ranks.

Under ``torchrun`` (``torchrun --standalone --nproc_per_node=2 -m pytest tests/integration/test_ddp_gloo.py``)
each pytest process is a rank: ``start_cases`` then runs the cases in it (env:// rendezvous, see compat/tooling/torchrun.py).
Otherwise the parent side (``start_cases`` / ``run_cases``) starts ``world_size`` ranks ONCE for a whole list of cases
(importing megatron costs 4-15 s of CPU per process): forked when the parent has already imported megatron on
CPU (a pin session's import check does; the ranks then inherit it), else spawned. They rendezvous through a
``file://`` store in a fresh temp dir
(no ports), waits with a timeout, kills any rank still alive, and returns each
rank's results as plain JSON-able dicts (read back from per-rank JSON files).

The worker side (``_worker``) runs inside each rank:
  1. wraps the torch.distributed collectives (and rebinds megatron's module-level
     aliases such as ``dist_reduce_scatter_func`` that a forked rank inherited),
  2. on gloo/CPU applies ``compat.tooling.cpu_patches.apply`` (never on a GPU backend),
  3. ``initialize_model_parallel(1, 1)`` once, then per case: a bf16 3x
     Linear(64,64) MegatronModule -> DistributedDataParallel -> forward/backward
     -> ``finish_grad_sync()`` -> ``get_megatron_optimizer(...)`` -> ``step()``,
     recording buffer dtypes, main_grad aliasing, reduced-grad checksums,
     grad-buffer bytes, the reduce collectives' bytes and the optimizer's extra
     fp32 ``.grad`` bytes (those not aliasing the DDP grad buffer).

Case dicts: ``{"id": str, "use_distributed_optimizer": bool, "mode": "resolver"|"inherited"}``.
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
import time
import traceback

from compat.tooling import torchrun as launch

HIDDEN = 64
NUM_LINEARS = 3
SEQ = 8  # rows of the input batch

MODES = ("resolver", "inherited")


def default_cases() -> list[dict]:
    """use_distributed_optimizer in (False, True) x mode in ("resolver", "inherited")."""
    cases = []
    for dist_opt in (False, True):
        for mode in MODES:
            cases.append(
                {
                    "id": f"{mode}-{'distopt' if dist_opt else 'nodistopt'}",
                    "use_distributed_optimizer": dist_opt,
                    "mode": mode,
                }
            )
    return cases


# ----------------------------------------------------------------------------------------
# Parent side (no torch import here)
# ----------------------------------------------------------------------------------------


class DdpRun:
    """Ranks started by ``start_cases``. ``wait()`` joins them (within the timeout, counted from the start)
    and returns their results; ``stop()`` kills whatever still runs and removes the temp dir."""

    def __init__(self, procs, tmp: tempfile.TemporaryDirectory, timeout: float, t0: float):
        self.procs, self._tmp, self.timeout, self.t0 = procs, tmp, timeout, t0
        self._results: dict | None = None

    def wait(self) -> dict:
        """``{"ranks": [rank0_dict, ...], "exitcodes": [...], "killed": [...], "wall_s": float}``; a rank
        that crashed or timed out has ``{"rank": r, "error": "..."}`` instead of its results."""
        if self._results is not None:
            return self._results
        deadline = self.t0 + self.timeout
        for p in self.procs:
            p.join(max(0.0, deadline - time.monotonic()))
        killed = self._kill_alive()
        ranks = []
        for rank, p in enumerate(self.procs):
            path = os.path.join(self._tmp.name, f"rank{rank}.json")
            if os.path.exists(path):
                with open(path) as fh:
                    ranks.append(json.load(fh))
            else:
                why = "killed after timeout" if rank in killed else f"exit code {p.exitcode}"
                ranks.append({"rank": rank, "error": f"rank {rank} wrote no result ({why})"})
        self._results = {
            "ranks": ranks,
            "exitcodes": [p.exitcode for p in self.procs],
            "killed": killed,
            "wall_s": time.monotonic() - self.t0,
        }
        self._tmp.cleanup()
        return self._results

    def stop(self) -> None:
        self._kill_alive()
        self._tmp.cleanup()

    def _kill_alive(self) -> list[int]:
        killed = []
        for rank, p in enumerate(self.procs):
            if p.is_alive():  # a hung rank keeps pipes/stores open: never leave it behind
                p.kill()
                p.join(10)
                killed.append(rank)
        return killed


def start_cases(
    cases: list[dict] | None = None,
    *,
    backend: str = "gloo",
    world_size: int = 2,
    timeout: float | None = None,
    mutation_trap: bool = True,
) -> DdpRun:
    """Spawn ``world_size`` ranks that run every case, and return at once (see ``DdpRun``). Under torchrun this
    process is one of the ranks: the cases run here when ``wait()`` is called (``TorchrunRun``)."""
    import multiprocessing as mp

    cases = default_cases() if cases is None else cases
    here = launch.torchrun_rank()
    if here is not None:
        return TorchrunRun(here, cases, backend, mutation_trap)
    if timeout is None:
        timeout = float(os.environ.get("MCORE_COMPAT_DDP_TIMEOUT", "420"))
    ctx = mp.get_context(_start_method(backend))
    t0 = time.monotonic()
    tmp = tempfile.TemporaryDirectory(prefix="mcore_ddp_")
    store = os.path.join(tmp.name, "store")
    procs = []
    for rank in range(world_size):
        p = ctx.Process(
            target=_worker,
            args=(rank, world_size, backend, "file://" + store, cases, tmp.name, mutation_trap),
            name=f"mcore-ddp-rank{rank}",
        )
        p.start()
        procs.append(p)
    return DdpRun(procs, tmp, timeout, t0)


class TorchrunRun:
    """This process is rank ``here.rank`` of a torchrun launch (env:// rendezvous): ``wait()`` runs the cases in it
    (the CPU patches too, on gloo: the process is a rank, not a test parent) and all-gathers every rank's results,
    so each rank's tests see the same ``{"ranks": [...], ...}`` as after ``DdpRun.wait``."""

    def __init__(self, here, cases, backend, mutation_trap):
        self.here, self.cases, self.backend, self.mutation_trap = here, cases, backend, mutation_trap
        self._results: dict | None = None

    def wait(self) -> dict:
        if self._results is None:
            t0 = time.monotonic()
            mine = run_rank(self.here.rank, self.here.world_size, self.backend, self.here.init_method, self.cases,
                            self.mutation_trap, local_rank=self.here.local_rank)
            ranks = [mine]
            import torch.distributed as dist

            if dist.is_initialized():
                ranks = [None] * self.here.world_size
                dist.all_gather_object(ranks, mine)
            self._results = {"ranks": ranks, "exitcodes": [], "killed": [], "wall_s": time.monotonic() - t0,
                             "launcher": "torchrun"}
        return self._results

    def stop(self) -> None:
        pass


def _start_method(backend: str) -> str:
    """fork when this process has already imported megatron (a pin session's import check does) and the ranks
    run on CPU: they inherit the import instead of each paying torch + megatron again (~4 s of CPU apiece).
    Otherwise spawn: nccl needs it (CUDA cannot be forked), and a parent without megatron gains nothing."""
    import multiprocessing as mp

    torch = sys.modules.get("torch")
    if (backend == "gloo" and "megatron.core" in sys.modules and "fork" in mp.get_all_start_methods()
            and not (torch is not None and torch.cuda.is_initialized())):
        return "fork"
    return "spawn"


def run_cases(cases: list[dict] | None = None, **kwargs) -> dict:
    """Spawn the ranks once, run every case in each, return their results (``DdpRun.wait``)."""
    return start_cases(cases, **kwargs).wait()


# ----------------------------------------------------------------------------------------
# Worker side (runs in spawned ranks only)
# ----------------------------------------------------------------------------------------

_COMM = {"phase": None, "log": []}


def _wrap_collectives():
    """Record (op, dtype, bytes) of every collective issued while _COMM['phase'] is set.

    Bytes are the input tensor's bytes (all_reduce: the tensor; reduce-scatter:
    the full input bucket; all-gather: the local shard) -- i.e. what a rank
    contributes, so a bf16 grad reduce moves exactly half the bytes of fp32.
    """
    import torch.distributed as dist

    def wrap(name, tensor_arg):
        orig = getattr(dist, name, None)
        if orig is None or getattr(orig, "_mcore_compat_wrapped", False):
            return

        def wrapper(*args, **kwargs):
            if _COMM["phase"] is not None:
                t = kwargs.get("input") if tensor_arg == "input" else None
                if t is None:
                    if tensor_arg == "input":
                        t = kwargs.get("input_tensor", args[1] if len(args) > 1 else None)
                    else:
                        t = kwargs.get("tensor", args[0] if args else None)
                if hasattr(t, "element_size"):
                    _COMM["log"].append(
                        {
                            "phase": _COMM["phase"],
                            "op": name,
                            "dtype": str(t.dtype).replace("torch.", ""),
                            "bytes": t.numel() * t.element_size(),
                        }
                    )
            return orig(*args, **kwargs)

        wrapper._mcore_compat_wrapped = True
        wrapper.__name__ = name
        wrapper.__wrapped__ = orig
        setattr(dist, name, wrapper)
        # A forked rank inherits megatron modules imported before this wrap: rebind their module-level aliases
        # (``dist_reduce_scatter_func = torch.distributed.reduce_scatter_tensor``) to the wrapper too.
        for module_name, module in list(sys.modules.items()):
            if module_name.startswith("megatron") and module is not None:
                for attr, value in list(vars(module).items()):
                    if value is orig:
                        setattr(module, attr, wrapper)

    wrap("all_reduce", "tensor")
    wrap("reduce_scatter_tensor", "input")
    wrap("_reduce_scatter_base", "input")
    wrap("all_gather_into_tensor", "input")
    wrap("_all_gather_base", "input")


def make_ddp_config(case: dict):
    """THE one place a case's DistributedDataParallelConfig is built (via the project API).

    "resolver": compat.build_ddp_config with an Adam optimizer config, so the
    resolver injects grad_reduce_in_fp32=True. "inherited": no optimizer config,
    so nothing is injected and Megatron's default (grad_reduce_in_fp32=False) holds.
    """
    import compat

    overrides = {"use_distributed_optimizer": case["use_distributed_optimizer"]}
    overrides.update(case.get("extra_overrides", {}))
    optimizer_config = {"optimizer": "adam"} if case["mode"] == "resolver" else None
    return compat.build_ddp_config(overrides, optimizer_config)


def _storage_ptr(t) -> int:
    return t.untyped_storage().data_ptr()


def _build_model(config, device):
    import torch
    from megatron.core.transformer.module import MegatronModule

    class TinyModel(MegatronModule):
        def __init__(self, cfg):
            super().__init__(config=cfg)
            self.layers = torch.nn.ModuleList(
                [torch.nn.Linear(HIDDEN, HIDDEN, dtype=torch.bfloat16, device=device) for _ in range(NUM_LINEARS)]
            )

        def forward(self, x):
            for i, layer in enumerate(self.layers):
                x = layer(x)
                if i + 1 < len(self.layers):
                    x = torch.nn.functional.gelu(x)
            return x

    torch.manual_seed(1234)  # identical weights on every rank (Megatron DDP does not broadcast)
    return TinyModel(config)


def _transformer_config():
    import torch
    from megatron.core.transformer.transformer_config import TransformerConfig

    return TransformerConfig(
        num_layers=1,
        hidden_size=HIDDEN,
        num_attention_heads=4,
        bf16=True,
        params_dtype=torch.bfloat16,
        pipeline_dtype=torch.bfloat16,
    )


def _wrap_ddp(config, ddp_config, model):
    import inspect

    from megatron.core import parallel_state
    from megatron.core.distributed import DistributedDataParallel

    params = inspect.signature(DistributedDataParallel.__init__).parameters
    kwargs = {}
    if "data_parallel_group" in params:  # 0.7.0 takes the groups explicitly
        kwargs["data_parallel_group"] = parallel_state.get_data_parallel_group(with_context_parallel=True)
    if "expert_data_parallel_group" in params:
        getter = getattr(parallel_state, "get_data_modulo_expert_parallel_group", None)
        kwargs["expert_data_parallel_group"] = getter() if getter else None
    return DistributedDataParallel(config, ddp_config, model, **kwargs)


def _build_optimizer(ddp_model, use_distributed_optimizer):
    from megatron.core.optimizer import OptimizerConfig, get_megatron_optimizer

    opt_cfg = OptimizerConfig(
        optimizer="adam",
        lr=1e-3,
        bf16=True,
        use_distributed_optimizer=use_distributed_optimizer,
        clip_grad=1.0,
    )
    return get_megatron_optimizer(opt_cfg, [ddp_model])


def _inner_optimizers(opt):
    return list(getattr(opt, "chained_optimizers", None) or [opt])


def _fp32_grad_accounting(opt, buffer_ptrs):
    """Bytes of fp32 .grad on the optimizer's main params, split into aliasing / extra."""
    import torch

    extra = aliased = 0
    n = 0
    for inner in _inner_optimizers(opt):
        for group in inner.optimizer.param_groups:
            for p in group["params"]:
                g = p.grad
                if g is None or g.dtype != torch.float32:
                    continue
                n += 1
                nbytes = g.numel() * g.element_size()
                if _storage_ptr(g) in buffer_ptrs:
                    aliased += nbytes
                else:
                    extra += nbytes
    return {"extra": extra, "aliased": aliased, "n_grads": n}


def _buffers(ddp):
    return list(getattr(ddp, "buffers", [])) + list(getattr(ddp, "expert_parallel_buffers", []) or [])


def _describe_buffer(buf):
    params = sorted(buf.param_index_map.items(), key=lambda kv: kv[1][0])
    buckets = []
    for b in buf.buckets:
        offset = getattr(b, "offset", None)
        if offset is None:  # derive from the view's storage offset
            offset = b.grad_data.storage_offset() - buf.grad_data.storage_offset()
        buckets.append({"offset": int(offset), "numel": int(b.grad_data.numel())})
    return {
        "param_dtype": str(buf.param_dtype).replace("torch.", ""),
        "grad_dtype": str(buf.grad_dtype).replace("torch.", ""),
        "grad_data_dtype": str(buf.grad_data.dtype).replace("torch.", ""),
        "numel": int(buf.grad_data.numel()),
        "grad_bytes": int(buf.grad_data.numel() * buf.grad_data.element_size()),
        "buckets": buckets,
        "param_ranges": [[int(v[0]), int(v[1])] for _, v in params],
    }


def _reduced_grads(ddp, use_dist_opt, rank, world_size, group=None):
    """fp32 copy of every buffer's reduced grads as seen after finish_grad_sync.

    All-reduce: the whole buffer is the result on every rank. Reduce-scatter:
    only the rank's shard of each bucket is reduced; the shards are all-gathered
    here (outside the recorded phase) to rebuild the full result.
    """
    import torch
    import torch.distributed as dist

    out = []
    for buf in _buffers(ddp):
        full = buf.grad_data.detach().float().clone()
        if use_dist_opt:
            for b in buf.buckets:
                n = b.grad_data.numel()
                shard = n // world_size
                off = b.grad_data.storage_offset() - buf.grad_data.storage_offset()
                mine = full[off + rank * shard : off + (rank + 1) * shard].contiguous()
                parts = [torch.empty_like(mine) for _ in range(world_size)]
                dist.all_gather(parts, mine, group=group)
                full[off : off + shard * world_size] = torch.cat(parts)
        out.append(full)
    return out


def _run_case(case, rank, world_size, device, backend):
    import hashlib

    import torch
    import torch.distributed as dist

    rec = {"id": case["id"], "mode": case["mode"], "use_distributed_optimizer": case["use_distributed_optimizer"]}
    config = _transformer_config()
    ddp_config = make_ddp_config(case)
    rec["ddp_config_type"] = f"{type(ddp_config).__module__}.{type(ddp_config).__qualname__}"
    rec["grad_reduce_in_fp32"] = bool(ddp_config.grad_reduce_in_fp32)
    rec["config_use_distributed_optimizer"] = bool(ddp_config.use_distributed_optimizer)
    model = _build_model(config, device)
    ddp = _wrap_ddp(config, ddp_config, model)
    rec["model_numel"] = sum(p.numel() for p in model.parameters())
    bufs = _buffers(ddp)
    rec["buffers"] = [_describe_buffer(b) for b in bufs]
    rec["grad_buffer_bytes"] = sum(b["grad_bytes"] for b in rec["buffers"])
    buffer_ptrs = {_storage_ptr(b.grad_data) for b in bufs}

    if hasattr(ddp, "zero_grad_buffer"):
        ddp.zero_grad_buffer()
    torch.manual_seed(100 + rank)  # different data per rank so the reduction matters
    x = torch.randn(SEQ, HIDDEN, dtype=torch.bfloat16, device=device)
    out = ddp(x)
    loss = out.float().pow(2).mean()
    loss.backward()
    rec["loss"] = float(loss)

    # Reference: mean over ranks of the local (pre-reduction) grads, computed in fp32.
    local = [b.grad_data.detach().float().clone() for b in bufs]
    for t in local:
        dist.all_reduce(t)
        t /= world_size

    _COMM["phase"], _COMM["log"] = "grad_sync", []
    t0 = time.perf_counter()
    ddp.finish_grad_sync()
    rec["finish_grad_sync_s"] = time.perf_counter() - t0
    rec["grad_sync_collectives"] = list(_COMM["log"])
    _COMM["phase"] = None
    rec["reduce_bytes"] = sum(c["bytes"] for c in rec["grad_sync_collectives"] if "reduce" in c["op"])

    # main_grad must be a view into the DDP grad buffer (same storage, right offset).
    not_views = []
    for name, p in model.named_parameters():
        mg = getattr(p, "main_grad", None)
        owner = next((b for b in bufs if p in b.param_index_map), None)
        ok = (
            mg is not None
            and owner is not None
            and _storage_ptr(mg) == _storage_ptr(owner.grad_data)
            and mg.storage_offset() - owner.grad_data.storage_offset() == owner.param_index_map[p][0]
            and mg.dtype == owner.grad_data.dtype
        )
        if not ok:
            not_views.append(name)
    rec["main_grad_not_views"] = not_views
    rec["main_grad_dtypes"] = sorted(
        {str(p.main_grad.dtype).replace("torch.", "") for p in model.parameters() if hasattr(p, "main_grad")}
    )

    reduced = _reduced_grads(ddp, case["use_distributed_optimizer"], rank, world_size)
    h = hashlib.sha256()
    for t in reduced:
        h.update(t.cpu().numpy().tobytes())
    rec["grad_sha256"] = h.hexdigest()
    rec["grad_checksum"] = float(sum(t.double().sum() for t in reduced))
    rec["grad_abs_checksum"] = float(sum(t.double().abs().sum() for t in reduced))
    rec["ref_max_abs"] = max(float(t.abs().max()) for t in local)
    rec["max_abs_err_vs_mean"] = max(float((red - ref).abs().max()) for red, ref in zip(reduced, local))

    # Optimizer + step, recording the fp32 .grad tensors the step works on.
    opt = _build_optimizer(ddp, case["use_distributed_optimizer"])
    inners = _inner_optimizers(opt)
    rec["optimizer_classes"] = [type(opt).__name__] + ([type(i).__name__ for i in inners] if inners != [opt] else [])
    rec["torch_optimizer_classes"] = [type(i.optimizer).__name__ for i in inners]
    seen = {}
    for inner in inners:
        torch_opt = inner.optimizer
        orig_step = torch_opt.step

        def step_probe(*a, _orig=orig_step, **k):
            acc = _fp32_grad_accounting(opt, buffer_ptrs)
            seen.setdefault("at_step", acc)
            return _orig(*a, **k)

        torch_opt.step = step_probe
    cuda = device.type == "cuda"
    if cuda:
        torch.cuda.synchronize()
        torch.cuda.reset_peak_memory_stats()
        rec["cuda_mem_before_step"] = torch.cuda.memory_allocated()
    _COMM["phase"], _COMM["log"] = "step", []
    t0 = time.perf_counter()
    result = opt.step()
    rec["step_s"] = time.perf_counter() - t0
    _COMM["phase"] = None
    rec["step_collectives"] = list(_COMM["log"])
    if cuda:
        torch.cuda.synchronize()
        rec["cuda_peak_during_step"] = torch.cuda.max_memory_allocated()
        rec["cuda_step_peak_delta"] = rec["cuda_peak_during_step"] - rec["cuda_mem_before_step"]
    success = result[0] if isinstance(result, tuple) else result
    rec["step_success"] = bool(success)
    if "at_step" not in seen:
        raise RuntimeError("the inner torch optimizer's step() was never called")
    at = seen["at_step"]
    rec["extra_fp32_grad_bytes"] = at["extra"]
    rec["aliased_fp32_grad_bytes"] = at["aliased"]
    rec["n_fp32_main_grads"] = at["n_grads"]
    after = _fp32_grad_accounting(opt, buffer_ptrs)
    rec["extra_fp32_grad_bytes_after_step"] = after["extra"]
    # The step must have changed the model weights, identically on every rank.
    wh = hashlib.sha256()
    for p in model.parameters():
        wh.update(p.detach().float().cpu().numpy().tobytes())
    rec["weights_sha256_after_step"] = wh.hexdigest()
    torch.manual_seed(1234)
    fresh = _build_model(config, device)
    rec["weights_changed"] = any(
        not torch.equal(a.detach(), b.detach()) for a, b in zip(model.parameters(), fresh.parameters())
    )
    return rec


def _mutation_trap(rank, world_size, device):
    """DDP rewrites ``bucket_size`` on the config object it receives; a later
    compat.build_ddp_config call must hand back a fresh, untouched object."""
    case = {
        "id": "mutation-trap",
        "mode": "resolver",
        "use_distributed_optimizer": False,
        "extra_overrides": {"overlap_grad_reduce": True},
    }
    config = _transformer_config()
    cfg = make_ddp_config(case)
    before = cfg.bucket_size
    _wrap_ddp(config, cfg, _build_model(config, device))
    after = cfg.bucket_size
    fresh = make_ddp_config(case)
    return {
        "bucket_size_before": before,
        "bucket_size_after": after,
        "fresh_bucket_size": fresh.bucket_size,
        "fresh_is_new_object": fresh is not cfg,
        "fresh_grad_reduce_in_fp32": bool(fresh.grad_reduce_in_fp32),
        "dp_size": world_size,
    }


def run_rank(rank, world_size, backend, init_method, cases, mutation_trap, *, local_rank=None) -> dict:
    """One rank's work (forked, spawned or launched by torchrun): patches, init, every case; never raises."""
    os.environ["MCORE_COMPAT_WORKER"] = "1"
    if backend != "nccl":  # the CPU path behaves the same on a GPU host: hide the GPUs
        os.environ["CUDA_VISIBLE_DEVICES"] = ""
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    result = {"rank": rank, "world_size": world_size, "backend": backend, "cases": {}, "error": None,
              "init_method": init_method.split(":")[0]}
    t_start = time.perf_counter()
    try:
        import torch

        torch.set_num_threads(1)
        result["torch_version"] = torch.__version__
        _wrap_collectives()  # before megatron binds any collective at import time
        from compat.version import installed_version

        version = installed_version()
        result["megatron_version"] = version
        device = launch.rank_device(backend, rank if local_rank is None else local_rank)
        if backend == "nccl":
            result["patches"] = []
        else:
            from compat.tooling import cpu_patches

            result["patches"] = cpu_patches.apply(version)
        torch.distributed.init_process_group(backend, init_method=init_method, rank=rank, world_size=world_size)
        from megatron.core import parallel_state

        parallel_state.initialize_model_parallel(1, 1)
        result["import_and_init_s"] = time.perf_counter() - t_start
        for case in cases:
            try:
                result["cases"][case["id"]] = _run_case(case, rank, world_size, device, backend)
            except Exception:
                result["cases"][case["id"]] = {"id": case["id"], "error": traceback.format_exc()}
                raise
        if mutation_trap:
            result["mutation_trap"] = _mutation_trap(rank, world_size, device)
    except BaseException:
        result["error"] = traceback.format_exc()
    result["total_s"] = time.perf_counter() - t_start
    return result


def _worker(rank, world_size, backend, init_method, cases, out_dir, mutation_trap):
    """Target of a forked or spawned rank: run_rank, its result as rank<r>.json, then exit hard."""
    result = run_rank(rank, world_size, backend, init_method, cases, mutation_trap)
    launch.finish_rank(result, out_dir)


# ----------------------------------------------------------------------------------------
# Parent-side expectations (pure Python over the worker's reports)
# ----------------------------------------------------------------------------------------


def expected_main_param_grad_numel(rec: dict, rank: int, world_size: int) -> int:
    """Elements of fp32 main-param grads the optimizer holds on ``rank``.

    Without the distributed optimizer: every param (the buffers' param ranges).
    With it: the part of each param range that falls into this rank's shard of
    each bucket, where a bucket of ``numel`` elements at ``offset`` is split into
    ``world_size`` equal shards (padding belongs to no param, so it is not counted).
    """
    total = 0
    for buf in rec["buffers"]:
        ranges = buf["param_ranges"]
        if not rec["use_distributed_optimizer"]:
            total += sum(end - start for start, end in ranges)
            continue
        for bucket in buf["buckets"]:
            shard = bucket["numel"] // world_size
            lo = bucket["offset"] + rank * shard
            hi = lo + shard
            total += sum(max(0, min(hi, end) - max(lo, start)) for start, end in ranges)
    return total


def rank_errors(results: dict) -> list[str]:
    """Every rank/case error in a run_cases() result, formatted for a failure message."""
    errs = []
    for r in results["ranks"]:
        if r.get("error"):
            errs.append(f"rank {r['rank']}:\n{r['error']}")
        for cid, c in (r.get("cases") or {}).items():
            if c.get("error") and c["error"] not in (r.get("error") or ""):
                errs.append(f"rank {r['rank']} case {cid}:\n{c['error']}")
    if results.get("killed"):
        errs.append(f"ranks killed after the timeout: {results['killed']}")
    return errs
