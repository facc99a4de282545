"""The equivalence lane's training run inside one rank (imported by worker.py after the patches).

The model is fixed here (GPTModel arguments that are not config fields); everything a config class holds comes from
the plan's overrides, built by compat. Names are "stable": the module path without the Float16Module/DDP wrappers,
mapped through ``names.canonical_name`` where a release renamed a module.
"""
from __future__ import annotations

import ddp_harness
import names

VOCAB = 128
SEQ = 16
MICRO_BATCH = 2  # sequences per data-parallel rank and step


def build_configs(variant: dict):
    """The three configs through compat: the optimizer first, DDP from it (FP32 resolver, cross rules).

    A field the plan pinned to an older release's default (``variant["pinned"]``) that this release refuses when
    building (its __post_init__ names it) is left at this release's default, and the refusal is recorded."""
    import compat

    overrides = {k: dict(v) for k, v in variant["overrides"].items()}
    pinned = {k: set(v) for k, v in (variant.get("pinned") or {}).items()}
    refused = {}
    while True:
        try:
            tf = compat.build_transformer_config(overrides["transformer"])
            opt = compat.build_optimizer_config(overrides["optimizer"])
            return tf, opt, compat.build_ddp_config(overrides["ddp"], opt), refused
        except Exception as exc:  # the release's own check (a ValueError, an AssertionError, a CompatError)
            message = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
            named = [(key, name) for key, names in pinned.items() for name in names if name in message]
            if not named:
                raise
            for key, name in named:
                overrides[key].pop(name, None)
                pinned[key].discard(name)
                refused[f"{key}.{name}"] = f"{type(exc).__name__}: {message[:200]}"


def _values(obj) -> dict:
    import dataclasses

    out = {}
    for f in dataclasses.fields(obj):
        value = getattr(obj, f.name, None)
        if value is None or isinstance(value, (bool, int, float, str)):
            out[f.name] = value
        elif hasattr(value, "name") and type(value).__module__.startswith("megatron"):  # an Enum member
            out[f.name] = f"{type(value).__name__}.{value.name}"
        else:
            text = repr(value)
            out[f.name] = text if "0x" not in text else f"<{type(value).__name__}>"
    return out


def _gpt_model(tf_config, device):
    from megatron.core.models.gpt.gpt_layer_specs import get_gpt_layer_local_spec
    from megatron.core.models.gpt.gpt_model import GPTModel
    from megatron.core.transformer.module import Float16Module

    model = GPTModel(config=tf_config, transformer_layer_spec=get_gpt_layer_local_spec(), vocab_size=VOCAB,
                     max_sequence_length=SEQ, position_embedding_type="learned_absolute")
    # built on the CPU (use_cpu_initialization); moved to the rank's device as Megatron's get_model does
    return Float16Module(tf_config, model.to(device))


def load_initial_weights(module, seed: int) -> dict:
    """Every parameter from ``names.initial_tensor`` (by stable name, the full tensor, then this TP rank's slice);
    returns {stable name: sha256 of the full initial tensor}."""
    import torch
    from megatron.core import parallel_state

    tp_rank = parallel_state.get_tensor_model_parallel_rank()
    tp_size = parallel_state.get_tensor_model_parallel_world_size()
    hashes = {}
    with torch.no_grad():
        for raw, p in module.named_parameters():
            name = names.canonical_name(raw)
            dim = getattr(p, "partition_dim", -1) if getattr(p, "tensor_model_parallel", False) else -1
            shape = list(p.shape)
            if dim >= 0:
                shape[dim] *= tp_size
            full = names.initial_tensor(name, shape, seed)
            hashes[name] = names.sha256_of(full)
            piece = full.narrow(dim, tp_rank * p.shape[dim], p.shape[dim]) if dim >= 0 else full
            p.copy_(piece.to(p.dtype))
    return hashes


def batch(step: int, seed: int, dp_rank: int, dp_size: int):
    """Step ``step``'s global batch (the same on every pin), this DP rank's slice: (tokens, labels)."""
    import torch

    gen = torch.Generator().manual_seed(seed * 1000 + step)
    data = torch.randint(0, VOCAB, (MICRO_BATCH * dp_size, SEQ + 1), generator=gen)
    mine = data[dp_rank * MICRO_BATCH:(dp_rank + 1) * MICRO_BATCH]
    return mine[:, :-1].contiguous(), mine[:, 1:].contiguous()


def memory(ddp, opt, device) -> dict:
    """Bytes per rank: DDP param and grad buffers, the optimizer's fp32 main params and its state (CPU: these are
    the measurable allocation; on CUDA the allocator's peak is added)."""
    import torch

    out = {"param_buffer_bytes": 0, "grad_buffer_bytes": 0, "main_param_bytes": 0, "optimizer_state_bytes": 0}
    for buf in ddp_harness._buffers(ddp):
        if getattr(buf, "param_data", None) is not None:
            out["param_buffer_bytes"] += buf.param_data.numel() * buf.param_data.element_size()
        out["grad_buffer_bytes"] += buf.grad_data.numel() * buf.grad_data.element_size()
    seen = set()
    for inner in ddp_harness._inner_optimizers(opt):
        torch_opt = inner.optimizer
        for group in torch_opt.param_groups:
            for p in group["params"]:
                if id(p) not in seen:
                    seen.add(id(p))
                    out["main_param_bytes"] += p.numel() * p.element_size()
                for value in torch_opt.state.get(p, {}).values():
                    if torch.is_tensor(value):
                        out["optimizer_state_bytes"] += value.numel() * value.element_size()
    if device.type == "cuda":
        out["cuda_peak_allocated_bytes"] = torch.cuda.max_memory_allocated(device)
    return out


def _dtype_of_buffers(ddp) -> list[dict]:
    return [{"param_dtype": str(b.param_dtype).replace("torch.", ""), "grad_dtype": str(b.grad_dtype).replace(
        "torch.", ""), "numel": int(b.grad_data.numel())} for b in ddp_harness._buffers(ddp)]


def run_variant(variant: dict, plan: dict, rank: int, world_size: int, device) -> tuple[dict, dict]:
    """Train the variant; returns (JSON record, {"steps": [{"grads": {...}, "params": {...}}]} of tensors)."""
    import torch
    import torch.distributed as dist
    from megatron.core import parallel_state, tensor_parallel
    from megatron.core.optimizer import get_megatron_optimizer

    tp = int(variant.get("tp", 1))
    if parallel_state.model_parallel_is_initialized():
        parallel_state.destroy_model_parallel()
    parallel_state.initialize_model_parallel(tp, 1)
    tensor_parallel.model_parallel_cuda_manual_seed(plan["seed"])
    seed = plan["seed"]
    tf, opt_cfg, ddp_cfg, refused = build_configs(variant)
    rec = {"id": variant["id"], "tp": tp, "pinned_refused": refused,
           "tp_rank": parallel_state.get_tensor_model_parallel_rank(),
           "dp_rank": parallel_state.get_data_parallel_rank(),
           "built": {"transformer": _values(tf), "optimizer": _values(opt_cfg), "ddp": _values(ddp_cfg)}}
    module = _gpt_model(tf, device)
    rec["initial_sha256"] = load_initial_weights(module, seed)
    ddp = ddp_harness._wrap_ddp(tf, ddp_cfg, module)
    opt = get_megatron_optimizer(opt_cfg, [ddp])
    inner = ddp_harness._inner_optimizers(opt)
    rec["optimizer"] = [type(opt).__name__] + [type(i.optimizer).__name__ for i in inner]
    rec["buffers"] = _dtype_of_buffers(ddp)
    dp_rank = parallel_state.get_data_parallel_rank()
    dp_size = parallel_state.get_data_parallel_world_size()
    params = [(names.canonical_name(n), p) for n, p in module.named_parameters()]
    steps, tensors = [], []
    for step in range(plan["steps"]):
        if hasattr(ddp, "zero_grad_buffer"):
            ddp.zero_grad_buffer()
        opt.zero_grad()
        tokens, labels = batch(step, seed, dp_rank, dp_size)
        positions = torch.arange(SEQ).unsqueeze(0).expand(tokens.shape[0], SEQ)
        mask = torch.tril(torch.ones(1, 1, SEQ, SEQ, dtype=torch.bool)).logical_not()
        losses = ddp(tokens.to(device), positions.to(device), mask.to(device), labels=labels.to(device))
        loss = losses.float().mean()
        loss.backward()
        ddp.finish_grad_sync()
        grads = reduced_grads(ddp, params, ddp_cfg.use_distributed_optimizer)
        ok, grad_norm, zeros = _step(opt)
        mean_loss = loss.detach().clone()
        dist.all_reduce(mean_loss, group=parallel_state.get_data_parallel_group())
        mean_loss /= dp_size
        after = {name: p.detach().clone() for name, p in params}
        steps.append({
            "step": step, "loss": float(mean_loss), "loss_hex": float(mean_loss).hex(), "update_ok": bool(ok),
            "grad_norm": None if grad_norm is None else float(grad_norm),
            "num_zeros": None if zeros is None else int(zeros),
            "grad_sha256": {name: names.sha256_of(g) for name, g in grads.items()},
            "param_sha256": {name: names.sha256_of(t) for name, t in after.items()},
        })
        tensors.append({"grads": grads, "params": {k: v.float() for k, v in after.items()}})
    rec["steps"] = steps
    rec["memory"] = memory(ddp, opt, device)
    rec["param_names"] = [name for name, _ in params]
    rec["raw_param_names"] = [n for n, _ in module.named_parameters()]
    return rec, {"steps": tensors}


def reduced_grads(ddp, params, sharded: bool) -> dict:
    """{stable name: fp32 copy of the param's reduced grad} after finish_grad_sync. With the distributed optimizer
    each rank holds only its shard of every bucket reduced; the shards are all-gathered here (into a copy)."""
    import torch.distributed as dist
    from megatron.core import parallel_state

    group = parallel_state.get_data_parallel_group()
    buffers = ddp_harness._buffers(ddp)
    full = ddp_harness._reduced_grads(ddp, sharded, dist.get_rank(group), dist.get_world_size(group), group=group)
    out = {}
    for name, p in params:
        buf, data = next((b, d) for b, d in zip(buffers, full) if p in b.param_index_map)
        start, end = buf.param_index_map[p][:2]
        out[name] = data[start:end].view(p.shape).clone()
    return out


def _step(opt):
    """(update_successful, grad_norm, num_zeros_in_grad) from every release's optimizer.step()."""
    result = opt.step()
    if isinstance(result, tuple):
        return (list(result) + [None, None])[:3]
    return result, None, None
