"""Real megatron-core DDP + optimizer step on CPU: gloo, 2 ranks.

One start per module (at the end of collection, see ``start_early``; else by the ``ddp_run`` fixture) runs
the 4 cases (use_distributed_optimizer x {resolver, inherited}) plus the config-mutation trap; the tests below
only assert on the per-rank reports. In a pin session the ranks are forked after this process imported
megatron (tests/conftest.py), so they inherit that import; the CPU patches in ``compat/tooling/cpu_patches.py`` are applied
inside the ranks only, never here.
"""

from __future__ import annotations

import json
import os
import sys

import ddp_harness
import pytest

WORLD_SIZE = 2
CASES = ddp_harness.default_cases()
CASE_IDS = [c["id"] for c in CASES]

pytestmark = pytest.mark.megatron  # skipped by conftest.py where megatron-core is not installed


_early = None  # the ranks, when tests/integration/conftest.py started them at the end of collection


def start_early(config) -> None:
    """Start the ranks now: their torch + megatron imports then overlap the rest of the session."""
    global _early
    _early = ddp_harness.start_cases(CASES, backend="gloo", world_size=WORLD_SIZE)
    config.add_cleanup(_early.stop)  # -x, a failed import check or ^C: no rank is left behind


@pytest.fixture(scope="module")
def ddp_run():
    run = _early or ddp_harness.start_cases(CASES, backend="gloo", world_size=WORLD_SIZE)
    results = run.wait()  # under torchrun: this rank's cases, then every rank's results gathered
    report = os.environ.get("MCORE_COMPAT_DDP_REPORT")
    if report:  # raw per-rank results, e.g. for the reduce-bytes benchmark
        with open(report, "w") as fh:
            json.dump(results, fh, indent=1)
    errors = ddp_harness.rank_errors(results)
    if errors:
        pytest.fail("DDP worker failed:\n" + "\n".join(errors), pytrace=False)
    return results


def _per_rank(ddp_run, case_id):
    return [r["cases"][case_id] for r in ddp_run["ranks"]]


@pytest.fixture(params=CASE_IDS)
def case(request, ddp_run):
    return request.param, _per_rank(ddp_run, request.param)


def _world_size(ddp_run) -> int:
    """2 when this module forked its ranks; torchrun's WORLD_SIZE when each pytest process is a rank."""
    return len(ddp_run["ranks"])


def test_every_rank_ran_the_optimizer_step(case, ddp_run):
    cid, recs = case
    assert len(recs) == (WORLD_SIZE if ddp_run.get("launcher") != "torchrun" else int(os.environ["WORLD_SIZE"]))
    for rank, rec in enumerate(recs):
        assert rec["step_success"], f"{cid} rank {rank}: optimizer.step() reported failure"
        assert rec["weights_changed"], f"{cid} rank {rank}: step() did not update the weights"
    assert len({r["weights_sha256_after_step"] for r in recs}) == 1, f"{cid}: weights diverged across ranks"
    versions = {r["megatron_version"] for r in ddp_run["ranks"]}
    assert len(versions) == 1


def test_case_config_matches_mode(case):
    cid, recs = case
    for rec in recs:
        assert rec["config_use_distributed_optimizer"] == rec["use_distributed_optimizer"]
        if rec["mode"] == "resolver":
            assert rec["grad_reduce_in_fp32"] is True, f"{cid}: resolver did not inject grad_reduce_in_fp32"
        else:
            assert rec["grad_reduce_in_fp32"] is False, f"{cid}: inherited config must keep Megatron's default"


def test_grad_buffer_dtype_is_fp32_iff_grad_reduce_in_fp32(case):
    cid, recs = case
    for rec in recs:
        want = "float32" if rec["grad_reduce_in_fp32"] else "bfloat16"
        assert rec["buffers"], f"{cid}: DDP allocated no grad buffer"
        for buf in rec["buffers"]:
            assert buf["param_dtype"] == "bfloat16"
            assert buf["grad_dtype"] == want, (cid, buf)
            assert buf["grad_data_dtype"] == want, (cid, buf)
        assert rec["main_grad_dtypes"] == [want]


def test_every_main_grad_is_a_view_into_the_grad_buffer(case):
    cid, recs = case
    for rank, rec in enumerate(recs):
        assert rec["main_grad_not_views"] == [], f"{cid} rank {rank}: not views: {rec['main_grad_not_views']}"


def test_reduced_grads_identical_across_ranks_and_equal_the_mean(case):
    cid, recs = case
    assert len({r["grad_sha256"] for r in recs}) == 1, f"{cid}: reduced grads differ across ranks"
    assert len({r["grad_checksum"] for r in recs}) == 1
    for rec in recs:
        assert rec["grad_abs_checksum"] > 0, f"{cid}: all-zero grads"
        # fp32 reduce: exact; bf16 reduce: within a few bf16 ulps of the fp32 mean
        tol = 1e-6 if rec["grad_reduce_in_fp32"] else 2.0**-6
        assert rec["max_abs_err_vs_mean"] <= tol * rec["ref_max_abs"], (cid, rec["max_abs_err_vs_mean"])


def test_extra_fp32_grad_bytes(case, ddp_run):
    """Resolver: the optimizer's fp32 grads alias the DDP buffer (0 extra bytes).
    Inherited: the step materialises a second fp32 copy of exactly the grads it owns."""
    cid, recs = case
    for rank, rec in enumerate(recs):
        expected_numel = ddp_harness.expected_main_param_grad_numel(rec, rank, _world_size(ddp_run))
        assert expected_numel > 0
        if not rec["use_distributed_optimizer"]:
            assert expected_numel == rec["model_numel"]
        if rec["mode"] == "resolver":
            assert rec["extra_fp32_grad_bytes"] == 0, f"{cid} rank {rank}"
            assert rec["aliased_fp32_grad_bytes"] == 4 * expected_numel, f"{cid} rank {rank}"
        else:
            assert rec["extra_fp32_grad_bytes"] == 4 * expected_numel, f"{cid} rank {rank}"
            assert rec["aliased_fp32_grad_bytes"] == 0, f"{cid} rank {rank}"


def test_grad_reduce_moves_the_grad_buffer_once(case):
    cid, recs = case
    for rec in recs:
        ops = {c["op"] for c in rec["grad_sync_collectives"] if "reduce" in c["op"]}
        assert ops, f"{cid}: no reduce collective recorded during finish_grad_sync"
        dtypes = {c["dtype"] for c in rec["grad_sync_collectives"] if "reduce" in c["op"]}
        assert dtypes == {"float32" if rec["grad_reduce_in_fp32"] else "bfloat16"}
        assert rec["reduce_bytes"] == rec["grad_buffer_bytes"], cid


@pytest.mark.parametrize("dist_opt", ["nodistopt", "distopt"])
def test_bf16_reduce_moves_half_the_bytes_of_fp32(ddp_run, dist_opt):
    for rank in ddp_run["ranks"]:
        fp32 = rank["cases"][f"resolver-{dist_opt}"]["reduce_bytes"]
        bf16 = rank["cases"][f"inherited-{dist_opt}"]["reduce_bytes"]
        assert fp32 == 2 * bf16 > 0


def test_ddp_mutates_its_config_but_build_ddp_config_returns_a_fresh_one(ddp_run):
    for rank in ddp_run["ranks"]:
        trap = rank["mutation_trap"]
        assert trap["bucket_size_before"] is None
        # DistributedDataParallel.__init__ writes the default bucket size into the
        # config object it was handed (overlap_grad_reduce=True keeps it).
        assert trap["bucket_size_after"] is not None
        assert trap["bucket_size_after"] >= 1_000_000 * trap["dp_size"]
        assert trap["fresh_is_new_object"]
        assert trap["fresh_bucket_size"] is None
        assert trap["fresh_grad_reduce_in_fp32"] is True


def test_patches_only_in_workers(ddp_run):
    """The CPU patches ran in the ranks, never in this (parent) process."""
    if ddp_run.get("launcher") == "torchrun":
        pytest.skip("under torchrun this pytest process is a rank: the patches ran here by design")
    assert "cpu_patches" not in sys.modules
    assert os.environ.get("MCORE_COMPAT_WORKER") != "1"
    for rank in ddp_run["ranks"]:
        assert "cuda_to_cpu_mode" in rank["patches"]
