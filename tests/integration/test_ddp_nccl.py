"""GPU variant of test_ddp_gloo: nccl, world_size = min(2, #GPUs), no CPU patches; under torchrun
(``torchrun --nproc_per_node=8 -m pytest tests/integration/test_ddp_nccl.py``) every process is a rank on its GPU.

Same harness and worker (``ddp_harness.run_cases(backend="nccl")``). Besides the
byte accounting it records ``torch.cuda.max_memory_allocated`` across
``optimizer.step()``: the inherited config (bf16 grad buffer) makes the step
allocate a second fp32 copy of the grads, the resolver's fp32 buffer does not.

Whether CUDA exists is checked lazily in a subprocess, so the parent never
imports torch for this module (and not at all when megatron-core is absent).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import ddp_harness
import pytest

pytestmark = [pytest.mark.gpu, pytest.mark.megatron]  # conftest.py skips these without megatron-core

CASES = ddp_harness.default_cases()
CASE_IDS = [c["id"] for c in CASES]


def _cuda_device_count() -> int:
    code = "import torch; print(torch.cuda.device_count() if torch.cuda.is_available() else 0)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    try:
        return int(out.stdout.strip().splitlines()[-1])
    except (IndexError, ValueError):
        return 0


@pytest.fixture(scope="module")
def gpu_run():
    n = _cuda_device_count()
    if n < 1:
        pytest.skip("CUDA not available (torch.cuda.is_available() is False): nccl DDP test needs a GPU")
    world_size = min(2, n)
    results = ddp_harness.run_cases(CASES, backend="nccl", world_size=world_size)
    report = os.environ.get("MCORE_COMPAT_DDP_REPORT_GPU")
    if report:
        with open(report, "w") as fh:
            json.dump(results, fh, indent=1)
    errors = [e for e in ddp_harness.rank_errors(results) if _missing_dependency(e) is None]
    if errors:
        pytest.fail("nccl DDP worker failed:\n" + "\n".join(errors), pytrace=False)
    results["world_size"] = len(results["ranks"])  # torchrun: its WORLD_SIZE (one GPU per LOCAL_RANK)
    return results


# Old releases need NVIDIA Apex or Transformer Engine for these paths on a GPU (on CPU, cpu_patches stands in,
# but the GPU run takes no patches). Where the machine lacks them, the affected cases skip and say why.
MISSING_GPU_DEPENDENCIES = {
    "No module named 'apex'": "this megatron-core's optimizer imports NVIDIA Apex, which is not installed",
    "Please install Apex or Transformer Engine to use DistributedOptimizer":
        "this megatron-core's DistributedOptimizer needs Apex or Transformer Engine; neither is installed",
    "Invalid Transformer Engine version for FP8 distributed optimizer":
        "this megatron-core's DistributedOptimizer needs Transformer Engine on GPU; it is not installed",
}


def _missing_dependency(error: str | None) -> str | None:
    return next((why for text, why in MISSING_GPU_DEPENDENCIES.items() if error and text in error), None)


def _records(gpu_run, case_id):
    """Every rank's record of a case; skips (with the reason) where a GPU dependency is missing."""
    recs = []
    for rank in gpu_run["ranks"]:
        cases = rank.get("cases") or {}
        rec = cases.get(case_id)
        why = _missing_dependency((rec or {}).get("error")) or next(
            (_missing_dependency(c.get("error")) for c in cases.values() if _missing_dependency(c.get("error"))), None)
        if rec is None or rec.get("error"):
            if why:
                pytest.skip(f"{case_id}: {why}")
            pytest.fail(f"rank {rank['rank']} has no result for {case_id}", pytrace=False)
        recs.append(rec)
    return recs


@pytest.mark.parametrize("case_id", CASE_IDS)
def test_step_and_buffers_on_gpu(gpu_run, case_id):
    ws = gpu_run["world_size"]
    recs = _records(gpu_run, case_id)
    for rank, rec in enumerate(recs):
        assert gpu_run["ranks"][rank]["patches"] == []  # no CPU patches on the GPU path
        assert rec["step_success"] and rec["weights_changed"]
        want = "float32" if rec["grad_reduce_in_fp32"] else "bfloat16"
        assert rec["grad_reduce_in_fp32"] is (rec["mode"] == "resolver")
        assert {b["grad_dtype"] for b in rec["buffers"]} == {want}
        assert rec["main_grad_not_views"] == []
        expected = 4 * ddp_harness.expected_main_param_grad_numel(rec, rank, ws)
        if rec["mode"] == "resolver":
            assert rec["extra_fp32_grad_bytes"] == 0
            assert rec["aliased_fp32_grad_bytes"] == expected
        else:
            assert rec["extra_fp32_grad_bytes"] == expected > 0
    assert len({r["grad_sha256"] for r in recs}) == 1


@pytest.mark.parametrize("dist_opt", ["nodistopt", "distopt"])
def test_inherited_step_allocates_the_extra_fp32_grad_copy(gpu_run, dist_opt):
    """Peak CUDA memory across step(): the inherited config's extra fp32 grad copy is
    allocated during the step and is absent with the resolver's fp32 grad buffer."""
    pairs = zip(_records(gpu_run, f"resolver-{dist_opt}"), _records(gpu_run, f"inherited-{dist_opt}"))
    for rank, (res, inh) in zip(gpu_run["ranks"], pairs):
        assert res["extra_fp32_grad_bytes"] == 0
        assert inh["extra_fp32_grad_bytes"] > 0
        # the caching allocator rounds each block up, so the difference is at least the copy
        assert inh["cuda_step_peak_delta"] - res["cuda_step_peak_delta"] >= inh["extra_fp32_grad_bytes"], (
            rank["rank"],
            inh["cuda_step_peak_delta"],
            res["cuda_step_peak_delta"],
        )
