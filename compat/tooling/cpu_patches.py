# SPDX-License-Identifier: Apache-2.0
"""CPU-only patches that let megatron-core's DDP + optimizer step run on gloo.

Megatron-Core assumes CUDA everywhere on the DDP/optimizer path (buffers are
allocated on ``torch.cuda.current_device()``, scalars with ``device='cuda'``,
dtype checks compare ``param.type()`` with ``'torch.cuda.*Tensor'`` strings).
None of that touches the logic we test (buffer dtypes, main_grad aliasing,
the reduce collectives, the optimizer's fp32 grad copies), so on a CPU-only
host we redirect it to the CPU.

These patches change process-global state (``torch.cuda.current_device`` and
a TorchFunctionMode that stays active for the life of the process).  They are
therefore ONLY applied inside rank processes: ``apply()`` refuses to run unless
``MCORE_COMPAT_WORKER=1`` is set (our DDP harnesses in tests/ and a host's
``gloo_world`` ranks, compat.tooling.pytest_gloo, set it in the rank, never in
the pytest parent). They are applied for the gloo backend only; the nccl/GPU
run uses no patches at all. Tooling, not runtime: a training job never imports it.

Every patch says which versions need it, and every release-specific patch is
feature-detected (``version_str`` only labels errors). Measured with torch
2.13.0+cpu on Python 3.11; each patch was shown necessary by leaving it out
(``MCORE_COMPAT_CPU_PATCHES_SKIP=name[,name]``) and seeing the step fail:

=================  =====================================================
patch              megatron-core releases that need it (of the 13 pins)
=================  =====================================================
current_device     all (0.7.0 - 0.19.2)
cuda_to_cpu_mode   all (0.7.0 - 0.19.2)
apex_stub          0.7.0
distopt_assert     0.8.0, 0.9.0
distopt_adam       0.8.0
fp8_quantize_noop  0.12.3 (0.12.x)
current_stream     0.19.2 (0.19.x)
=================  =====================================================
"""

from __future__ import annotations

import os

_APPLIED: list[str] | None = None


def _make_cuda_to_cpu_mode():
    import torch

    class CudaToCpuMode(torch.overrides.TorchFunctionMode):
        """Every version (0.7.0-0.19.2): the optimizer path creates small tensors
        with ``device='cuda'`` (optimizer.py found_inf/_scale_one, grad_scaler.py,
        clip_grads.py) and checks ``param.type() in ['torch.cuda.BFloat16Tensor',
        ...]`` (Float16OptimizerWithFloat16Params / DistributedOptimizer), else
        ``TypeError: Wrapped parameters must be one of torch.cuda.FloatTensor``.
        """

        def __torch_function__(self, func, types, args=(), kwargs=None):
            kwargs = dict(kwargs or {})
            dev = kwargs.get("device")
            if dev is not None and str(dev).startswith("cuda"):
                kwargs["device"] = "cpu"
            if func is torch.Tensor.type and len(args) == 1 and not kwargs:
                name = func(*args)
                if name.startswith("torch.") and not name.startswith("torch.cuda."):
                    return name.replace("torch.", "torch.cuda.", 1)
                return name
            if func is torch.Tensor.cuda:
                return args[0]
            return func(*args, **kwargs)

    return CudaToCpuMode


def _optimizer_import_needs_apex_stub() -> bool:
    import importlib
    import sys

    try:
        importlib.import_module("megatron.core.optimizer")
        return False
    except ModuleNotFoundError as exc:
        if exc.name not in ("apex", "amp_C") and not str(exc.name).startswith("apex."):
            raise
    for name in [m for m in sys.modules if m.startswith("megatron.core.optimizer")]:
        del sys.modules[name]  # drop the half-imported package before retrying
    return True


def _install_apex_stub() -> None:
    """Pure-torch stand-ins for the Apex symbols 0.7.0 imports; the same fallbacks that
    megatron-core 0.9+ use itself (megatron.core.utils.local_multi_tensor_*)."""
    import sys
    import types

    import torch

    def multi_tensor_applier(op, noop_flag_buffer, tensor_lists, *args):
        return op(2048 * 32, noop_flag_buffer, tensor_lists, *args)

    def multi_tensor_l2norm(chunk_size, noop_flag, tensor_lists, per_tensor, *args):
        l2 = [[torch.norm(t) for t in tensor_list] for tensor_list in tensor_lists]
        l2_reduced = torch.norm(torch.tensor(l2))
        return torch.tensor([float(l2_reduced)], dtype=torch.float, device="cuda"), None

    def multi_tensor_scale(chunk_size, noop_flag, tensor_lists, scale):
        for src, dst in zip(tensor_lists[0], tensor_lists[1]):
            dst.copy_(src * scale)

    apex = types.ModuleType("apex")
    apex.__path__ = []  # a package, so `apex.optimizers` resolves via sys.modules
    optimizers = types.ModuleType("apex.optimizers")
    optimizers.FusedAdam = torch.optim.AdamW  # FusedAdam defaults to adam_w_mode=True
    optimizers.FusedSGD = torch.optim.SGD
    mta = types.ModuleType("apex.multi_tensor_apply")
    mta.multi_tensor_applier = multi_tensor_applier
    amp_c = types.ModuleType("amp_C")
    amp_c.multi_tensor_l2norm = multi_tensor_l2norm
    amp_c.multi_tensor_scale = multi_tensor_scale
    apex.optimizers = optimizers
    apex.multi_tensor_apply = mta
    sys.modules.update({"apex": apex, "apex.optimizers": optimizers, "apex.multi_tensor_apply": mta, "amp_C": amp_c})


def _start_grad_sync_uses_current_stream() -> bool:
    import inspect

    import megatron.core.distributed.param_and_grad_buffer as pgb

    cls = getattr(pgb, "_ParamAndGradBucketGroup", None)  # 0.10+; older: the bucket itself
    fn = getattr(cls, "start_grad_sync", None) if cls is not None else None
    if fn is None:
        return False
    try:
        # 0.17/0.18 call it only under num_distributed_optimizer_instances > 1 and
        # overlap_grad_reduce (`.wait_stream(torch.cuda.current_stream())`); 0.19 binds it
        # unconditionally at the top of the method.
        return "current_stream = torch.cuda.current_stream()" in inspect.getsource(fn)
    except (OSError, TypeError):  # no source available: be safe on CPU
        return True


def _source(obj) -> str:
    import inspect

    try:
        return inspect.getsource(obj)
    except (OSError, TypeError):
        return ""


def _wanted(name: str) -> bool:
    """MCORE_COMPAT_CPU_PATCHES_SKIP=a,b leaves patches out (to show a patch is needed)."""
    return name not in os.environ.get("MCORE_COMPAT_CPU_PATCHES_SKIP", "").split(",")


def applied() -> list[str]:
    """The patches this process applied (empty before ``apply`` or outside a rank)."""
    return list(_APPLIED or [])


def apply(version_str: str) -> list[str]:
    """Apply the CPU patches needed by megatron-core ``version_str``.

    Returns the names of the patches applied (recorded by the harness).
    Must be called in a spawned worker, after torch.distributed collectives
    were wrapped and before any DDP/optimizer object is built.
    """
    global _APPLIED
    if os.environ.get("MCORE_COMPAT_WORKER") != "1":
        raise RuntimeError(
            f"cpu_patches.apply({version_str!r}) changes process-global torch state; it may "
            "only run inside a spawned DDP worker (MCORE_COMPAT_WORKER=1), never in the pytest parent"
        )
    if _APPLIED is not None:
        return list(_APPLIED)

    import torch

    applied: list[str] = []
    # The harness calls apply() for the gloo/CPU backend only (with CUDA_VISIBLE_DEVICES
    # emptied, so the CPU path is the same on a GPU host); the nccl run is unpatched.

    # --- every version (0.7.0-0.19.2) -------------------------------------------------
    # _ParamAndGradBuffer allocates param/grad buffers with
    # device=torch.cuda.current_device(); DistributedOptimizer does the same for its
    # param-gather buffers. Without this: "Torch not compiled with CUDA enabled".
    if _wanted("current_device"):
        torch.cuda.current_device = lambda: "cpu"
        applied.append("current_device")

    # --- every version: device='cuda' -> cpu, .type() spoof, .cuda() no-op ---------------
    if _wanted("cuda_to_cpu_mode"):
        _make_cuda_to_cpu_mode()().__enter__()
        applied.append("cuda_to_cpu_mode")

    # --- 0.19.x: start_grad_sync() always calls torch.cuda.current_stream() -------------
    # (to wait on CUDA-graph wgrad events; none exist here), so finish_grad_sync() dies
    # with "Torch not compiled with CUDA enabled". The CPU "stream" (torch.cpu.Stream:
    # wait_event/wait_stream/record_event are no-ops) is the honest stand-in.
    # Feature-detected from the source of the bucket group's start_grad_sync.
    if _wanted("current_stream") and _start_grad_sync_uses_current_stream():
        torch.cuda.current_stream = torch.cpu.current_stream
        applied.append("current_stream")

    # --- 0.7.0: megatron.core.optimizer hard-imports NVIDIA Apex ------------------------
    # (optimizer/__init__.py: `from apex.optimizers import FusedAdam as Adam`, FusedSGD;
    # optimizer.py/clip_grads.py: `import amp_C`, `from apex.multi_tensor_apply import
    # multi_tensor_applier`). Apex is a CUDA extension and cannot exist on a CPU host.
    # 0.8.0+ guard these imports and fall back to torch.optim + local multi-tensor
    # helpers; we install exactly those fallbacks as stub modules. Feature-detected:
    # only when importing megatron.core.optimizer fails on a missing apex/amp_C.
    if _wanted("apex_stub") and _optimizer_import_needs_apex_stub():
        _install_apex_stub()
        applied.append("apex_stub")
    import megatron.core.optimizer  # noqa: F401  (must import cleanly from here on)

    # --- 0.8.0, 0.9.0: DistributedOptimizer.__init__ asserts Apex/TE is installed --------
    # (`assert HAVE_APEX_OR_TE, 'Please install Apex or Transformer Engine to use
    # DistributedOptimizer.'`). 0.9.0 already has the torch.optim fallback for
    # everything else (state_dict 'step' handling keyed on HAVE_APEX_OR_TE=False) and
    # 0.10.0 dropped the assert, so we lift it for the constructor ONLY and restore
    # the module flag afterwards. Feature-detected: the flag is False and __init__'s
    # source references it.
    import megatron.core.optimizer.distrib_optimizer as do

    if (
        _wanted("distopt_assert")
        and do.__dict__.get("HAVE_APEX_OR_TE") is False
        and "HAVE_APEX_OR_TE" in _source(do.DistributedOptimizer.__init__)
    ):
        orig_init = do.DistributedOptimizer.__init__

        def __init__(self, *args, **kwargs):
            do.HAVE_APEX_OR_TE = True
            try:
                orig_init(self, *args, **kwargs)
            finally:
                do.HAVE_APEX_OR_TE = False

        do.DistributedOptimizer.__init__ = __init__
        applied.append("distopt_assert")

    # --- 0.8.0: ...and leaves `Adam` undefined when neither is importable ---------------
    # (its `assert isinstance(optimizer, Adam)` then raises NameError). 0.9.0+ fall back
    # to torch.optim.Adam. We bind what optimizer/__init__.py itself builds in that case:
    # torch.optim.AdamW. Feature-detected: the module has no `Adam`.
    if _wanted("distopt_adam") and not hasattr(do, "Adam"):
        do.Adam = torch.optim.AdamW
        applied.append("distopt_adam")

    # --- 0.12.x: fp8_utils' no-TE fallback raises even with zero FP8 params -------------
    # DistributedOptimizer._copy_main_params_to_model_params always calls
    # quantize_param_shard(<fp8 params>, ...), and without Transformer Engine 0.12.x's
    # `_quantize_param_shard_impl(*args, **kwargs)` raises "Invalid Transformer Engine
    # version for FP8 distributed optimizer" unconditionally (0.13+ return early on an
    # empty list). Feature-detected: probe the stub with the empty lists it gets here.
    try:
        import megatron.core.fp8_utils as f8
    except ImportError:  # < 0.12: no fp8_utils, nothing to patch
        f8 = None
    impl = getattr(f8, "_quantize_param_shard_impl", None)
    if impl is not None and _wanted("fp8_quantize_noop"):
        try:
            impl([], [], [], None)
        except RuntimeError:

            def _quantize_param_shard_impl(model_params, *args, **kwargs):
                assert not len(model_params), "FP8 params need Transformer Engine"

            f8._quantize_param_shard_impl = _quantize_param_shard_impl
            applied.append("fp8_quantize_noop")

    _APPLIED = applied
    return list(applied)
