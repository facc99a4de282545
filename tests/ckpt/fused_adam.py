"""FusedAdam's constructor and state layout, in plain torch, for CPU hosts without Apex or Transformer Engine.

Why: without Apex/TE, megatron-core falls back to ``torch.optim.Adam(W)``, which keeps ``step`` per parameter.
The DistributedOptimizer's checkpoint code has a separate branch for that case, and it is broken in megatron-core
itself (``KeyError: 'step'``, ``step`` silently loaded as 0, one ``step`` tensor shared by all params; see
shared/research/ckpt_lane/README.md "Torch fallback"). No GPU user runs that branch. With this class installed as
``apex.optimizers.FusedAdam``, megatron's own imports take the Apex branch (``HAVE_APEX_OR_TE=True``,
``USING_APEX_OPTIMIZER=True``, ``USING_PYTORCH_OPTIMIZER=False``), i.e. the production checkpoint path.

What it covers (what the checkpoint path reads and writes):
- Apex ``FusedAdam.__init__``: ``lr, bias_correction, betas, eps, adam_w_mode, weight_decay, amsgrad,
  set_grad_none, capturable, master_weights`` (megatron passes ``adam_w_mode`` and, from 0.17, ``capturable``);
- the state layout: ``step`` is an int in each ``param_group`` (created at the first step), ``exp_avg`` and
  ``exp_avg_sq`` are per-param fp32 tensors; ``state_dict``/``load_state_dict`` are torch.optim.Optimizer's, as
  Apex's are;
- the update rule of Apex's ``multi_tensor_adam`` (ADAM_MODE_1 = decoupled weight decay, ADAM_MODE_0 = L2) in fp32.

What it does not cover:
- the CUDA kernel's numerics (fused multiply-adds, ``sqrtf``): a saver and a loader both run this class, so the
  lane compares like with like, but its bytes are not those of a GPU run;
- ``capturable=True`` (step as a device tensor, CUDA graphs), ``master_weights=True``, ``amsgrad=True``: they raise;
- Transformer Engine's FusedAdam extras: precision-aware state (``exp_avg_dtype``, ``exp_avg_sq_dtype``,
  ``master_weight_dtype``, ``use_decoupled_grad``, ``store_param_remainders``) and its ``state_dict`` overrides;
- FusedSGD (the lane's optimizer is Adam; ``apex.optimizers.FusedSGD`` is torch's SGD here).
"""
from __future__ import annotations

import torch


class CpuFusedAdam(torch.optim.Optimizer):
    """Apex ``FusedAdam`` semantics on any device, written with plain torch ops."""

    def __init__(self, params, lr=1e-3, bias_correction=True, betas=(0.9, 0.999), eps=1e-8, adam_w_mode=True,
                 weight_decay=0.0, amsgrad=False, set_grad_none=True, capturable=False, master_weights=False):
        if amsgrad:
            raise RuntimeError("FusedAdam does not support the AMSGrad variant.")
        if capturable or master_weights:
            raise NotImplementedError("CpuFusedAdam emulates capturable=False, master_weights=False only")
        defaults = dict(lr=lr, bias_correction=bias_correction, betas=betas, eps=eps, weight_decay=weight_decay)
        super().__init__(params, defaults)
        self.adam_w_mode = 1 if adam_w_mode else 0
        self.set_grad_none = set_grad_none

    def zero_grad(self, set_to_none=None):
        if set_to_none is None:
            set_to_none = self.set_grad_none
        super().zero_grad(set_to_none=set_to_none)

    @torch.no_grad()
    def step(self, closure=None):
        loss = closure() if closure is not None else None
        for group in self.param_groups:
            if len(group["params"]) == 0:
                continue
            beta1, beta2 = group["betas"]
            # Apex: the step lives in the param group, an int, incremented before the update.
            group["step"] = group["step"] + 1 if "step" in group else 1
            step = group["step"]
            c1 = 1.0 - beta1 ** step if group["bias_correction"] else 1.0
            c2 = 1.0 - beta2 ** step if group["bias_correction"] else 1.0
            lr, eps, decay = group["lr"], group["eps"], group["weight_decay"]
            for p in group["params"]:
                if p.grad is None:
                    continue
                if p.grad.is_sparse:
                    raise RuntimeError("FusedAdam does not support sparse gradients")
                state = self.state[p]
                if len(state) == 0:
                    state["exp_avg"] = torch.zeros_like(p, dtype=torch.float32)
                    state["exp_avg_sq"] = torch.zeros_like(p, dtype=torch.float32)
                g = p.grad.float()
                w = p.float()
                m, v = state["exp_avg"], state["exp_avg_sq"]
                if self.adam_w_mode == 0:  # ADAM_MODE_0: L2 regularisation folded into the gradient
                    g = g + decay * w
                m.mul_(beta1).add_(g, alpha=1.0 - beta1)
                v.mul_(beta2).addcmul_(g, g, value=1.0 - beta2)
                update = (m / c1) / ((v / c2).sqrt() + eps)
                if self.adam_w_mode == 1:  # ADAM_MODE_1: decoupled weight decay
                    update = update + decay * w
                p.copy_(w - lr * update)
        return loss


def install_as_apex() -> bool:
    """Make ``apex.optimizers.FusedAdam`` this class, before megatron is imported; False (and nothing done) when
    a real Apex or Transformer Engine optimizer is importable (then that one is the production path)."""
    import importlib.util
    import sys
    import types

    for real in ("transformer_engine", "apex"):
        if real not in sys.modules and importlib.util.find_spec(real) is not None:
            return False
    apex = types.ModuleType("apex")
    apex.__path__ = []  # a package: other `apex.*` imports fail with ImportError, as megatron's guards expect
    optimizers = types.ModuleType("apex.optimizers")
    optimizers.FusedAdam = CpuFusedAdam
    optimizers.FusedSGD = torch.optim.SGD
    apex.optimizers = optimizers
    sys.modules.update({"apex": apex, "apex.optimizers": optimizers})
    return True


def rebind_in_megatron() -> list[str]:
    """0.7.0 imports Apex unconditionally; cpu_patches then installs its own apex stand-in (FusedAdam = AdamW).
    Point megatron's ``Adam`` names back at this class. Returns the modules rebound."""
    import sys

    rebound = []
    stub = sys.modules.get("apex.optimizers")
    if stub is not None and getattr(stub, "FusedAdam", None) is not CpuFusedAdam:
        stub.FusedAdam = CpuFusedAdam
    for name in ("megatron.core.optimizer", "megatron.core.optimizer.distrib_optimizer"):
        module = sys.modules.get(name)
        if module is not None and getattr(module, "Adam", CpuFusedAdam) is not CpuFusedAdam:
            module.Adam = CpuFusedAdam
            rebound.append(name)
    return rebound

