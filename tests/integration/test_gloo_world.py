"""The gloo_world fixture (compat.tooling.pytest_gloo, loaded by its pytest11 entry point) as a host uses it: real
megatron-core DDP in 2 torchrun-started CPU ranks, with the CPU patches the package applies in the ranks."""
from __future__ import annotations

import math
import os

import pytest

pytestmark = pytest.mark.megatron  # conftest.py skips it without megatron-core; every pin session runs it


def ddp_grad_sync() -> dict:
    """In each rank: megatron DDP over a bf16 3-layer model, a rank-dependent batch, finish_grad_sync."""
    import ddp_harness as h
    import torch
    import torch.distributed as dist
    from megatron.core import parallel_state

    parallel_state.initialize_model_parallel(1, 1)
    config = h._transformer_config()
    ddp = h._wrap_ddp(config, h.make_ddp_config({"use_distributed_optimizer": False, "mode": "resolver"}),
                      h._build_model(config, torch.device("cpu")))
    torch.manual_seed(100 + dist.get_rank())
    ddp(torch.randn(h.SEQ, h.HIDDEN, dtype=torch.bfloat16)).float().pow(2).mean().backward()
    params = list(ddp.module.parameters())
    local = sum(float(p.main_grad.double().sum()) for p in params)
    ddp.finish_grad_sync()
    return {"local": local, "reduced": sum(float(p.main_grad.double().sum()) for p in params),
            "grad_dtype": str(params[0].main_grad.dtype)}


def fail_on_rank_one() -> int:
    import torch.distributed as dist

    if dist.get_rank() == 1:
        raise ValueError("boom on rank 1")
    return dist.get_world_size()


def test_megatron_ddp_in_a_torchrun_gloo_world(gloo_world):
    ranks = gloo_world(ddp_grad_sync, n=2)
    assert len(ranks) == 2
    assert ranks[0]["local"] != ranks[1]["local"]  # different batches: the reduction has something to do
    assert ranks[0]["reduced"] == ranks[1]["reduced"]
    total = ranks[0]["local"] + ranks[1]["local"]
    assert any(math.isclose(ranks[0]["reduced"], want, rel_tol=1e-3) for want in (total, total / 2))
    assert ranks[0]["grad_dtype"] == "torch.float32"  # the resolver's fp32 grad buffer
    for info in gloo_world.last_ranks:
        assert {"current_device", "cuda_to_cpu_mode"} <= set(info["patches"])  # from the package, in the rank
        expected = os.environ.get("MCORE_COMPAT_EXPECT_MEGATRON")
        assert expected is None or info["megatron_version"] == expected
    assert "MCORE_COMPAT_WORKER" not in os.environ  # nothing was patched in this (parent) process


def test_a_failing_rank_raises_with_its_traceback(gloo_world):
    from compat.tooling.pytest_gloo import GlooWorldError

    with pytest.raises(GlooWorldError, match="boom on rank 1") as exc:
        gloo_world(fail_on_rank_one, n=2, patches=False, timeout=180)
    assert exc.value.ranks[1]["error"] and "ValueError" in exc.value.ranks[1]["error"]
