"""The checkpoint lane's comparison and verdict logic on synthetic snapshots (no torch, no megatron).

The snapshots are built the way worker.py builds them: per parameter name, per key, one piece per rank with its
offset into the flattened parameter. A DistributedOptimizer-style state is split into two shards.
"""
from __future__ import annotations

import os
import struct
import tempfile

import compare
import lane
import pytest

NUMEL = 6
SHAPE = [2, 3]


def _f32(values) -> bytes:
    return struct.pack(f"<{len(values)}f", *values)


def _bf16(values) -> bytes:  # the upper half of each float32
    return b"".join(struct.pack("<f", v)[2:] for v in values)


def _step(n) -> dict:
    return compare.piece("int64", [], struct.pack("<q", n))


def full_state(seed: float = 1.0, step: int = 2) -> dict:
    """Two params, every key, whole tensors (a plain optimizer's rank)."""
    state = {}
    for i, name in enumerate(("layers.0.weight", "layers.0.bias")):
        base = [seed + i + k / 8 for k in range(NUMEL)]
        state[name] = {
            "weight": compare.piece("bfloat16", SHAPE, _bf16(base)),
            "main": compare.piece("float32", SHAPE, _f32(base)),
            "exp_avg": compare.piece("float32", SHAPE, _f32([v / 10 for v in base])),
            "exp_avg_sq": compare.piece("float32", SHAPE, _f32([v / 100 for v in base])),
            "step": _step(step),
        }
    return state


def sharded(seed: float = 1.0, step: int = 2, split: int = 4, shift: int = 0) -> list[dict]:
    """The same state as two DistributedOptimizer ranks: rank 0 holds elements [0, split), rank 1 the rest
    (its piece placed ``shift`` elements off)."""
    ranks = [{}, {}]
    for name, entries in full_state(seed, step).items():
        for r in (0, 1):
            ranks[r][name] = {"weight": entries["weight"]}  # the bf16 model weight is on every rank
        for key in ("main", "exp_avg", "exp_avg_sq"):
            raw = compare.base64.b64decode(entries[key]["data"])
            ranks[0][name][key] = compare.piece("float32", SHAPE, raw[: split * 4], 0)
            ranks[1][name][key] = compare.piece("float32", SHAPE, raw[split * 4:], split + shift)
        ranks[0][name]["step"] = ranks[1][name]["step"] = entries["step"]
    return ranks


def merged(ranks):
    state, problems = compare.merge(ranks)
    assert problems == []
    return state


def test_identical_states_compare_equal_plain_and_sharded():
    plain = merged([full_state(), full_state()])
    assert compare.compare(plain, plain) == []
    assert compare.compare(plain, merged(sharded())) == []  # shards reassemble to the whole tensor
    assert compare.incomplete(plain) == []


def test_a_changed_moment_is_caught():
    saved = merged(sharded())
    ranks = sharded()
    raw = bytearray(compare.base64.b64decode(ranks[1]["layers.0.bias"]["exp_avg_sq"]["data"]))
    raw[0] ^= 0x01  # one bit of one element
    ranks[1]["layers.0.bias"]["exp_avg_sq"]["data"] = compare.encode(bytes(raw))
    diffs = compare.compare(saved, merged(ranks))
    assert [(d.name, d.key, d.kind) for d in diffs] == [("layers.0.bias", "exp_avg_sq", "bytes")]
    assert "1 of 6 elements differ, first at 4" in diffs[0].detail


def test_a_missing_step_is_caught():
    saved = merged([full_state()])
    loaded = full_state()
    del loaded["layers.0.weight"]["step"]
    diffs = compare.compare(saved, merged([loaded]))
    assert [(d.name, d.key, d.kind) for d in diffs] == [("layers.0.weight", "step", "missing")]
    assert compare.incomplete(merged([loaded])) == [compare.Diff("layers.0.weight", "step", "missing")]


def test_a_step_of_another_type_or_value_is_caught():
    saved = merged([full_state(step=2)])
    as_float = full_state(step=2)
    for entries in as_float.values():
        entries["step"] = compare.piece("float32", [], _f32([2.0]))  # torch AdamW's per-param tensor
    assert {d.kind for d in compare.compare(saved, merged([as_float]))} == {"dtype"}
    assert {d.kind for d in compare.compare(saved, merged([full_state(step=0)]))} == {"bytes"}


def test_a_shifted_shard_is_caught():
    _, problems = compare.merge(sharded(shift=1))
    kinds = {(d.key, d.kind) for d in problems}
    assert ("main", "gap") in kinds and ("exp_avg", "gap") in kinds
    _, problems = compare.merge(sharded(shift=-1))  # overlapping shards that disagree (and a gap at the end)
    assert {d.kind for d in problems} == {"overlap", "gap"}
    _, problems = compare.merge(sharded(shift=3))  # running past the end of the tensor
    assert {d.kind for d in problems} >= {"range"}


def test_a_shard_shifted_off_the_start_is_caught():
    ranks = sharded()
    ranks[0]["layers.0.weight"]["main"]["offset"] = 1  # rank 0's shard placed one element late
    _, problems = compare.merge(ranks)
    assert [(d.key, d.kind, d.detail) for d in problems] == [
        ("main", "gap", "elements [0, 1) held by no rank"),
        ("main", "overlap", "ranks hold different bytes for elements [4, 5)")]


def test_a_missing_shard_is_caught():
    ranks = sharded()
    del ranks[1]["layers.0.weight"]["exp_avg"]
    _, problems = compare.merge(ranks)
    assert [(d.name, d.key, d.kind) for d in problems] == [("layers.0.weight", "exp_avg", "gap")]


def test_replicas_that_disagree_are_caught():
    a, b = full_state(), full_state()
    b["layers.0.bias"]["weight"] = compare.piece("bfloat16", SHAPE, _bf16([9.0] * NUMEL))
    _, problems = compare.merge([a, b])
    assert [(d.key, d.kind) for d in problems] == [("weight", "overlap")]


def test_negative_zero_and_nan_payloads_count():
    a = merged([{"p": {"main": compare.piece("float32", [1], _f32([0.0]))}}])
    b = merged([{"p": {"main": compare.piece("float32", [1], _f32([-0.0]))}}])
    assert [d.kind for d in compare.compare(a, b)] == ["bytes"]


def test_unchanged_finds_entries_a_load_could_not_prove():
    saved, fresh = merged([full_state(seed=1.0)]), merged([full_state(seed=5.0, step=0)])
    assert compare.unchanged(fresh, saved) == []
    fresh["layers.0.bias"]["step"] = saved["layers.0.bias"]["step"]
    assert compare.unchanged(fresh, saved) == [compare.Diff("layers.0.bias", "step", "unchanged")]


# ------------------------------------------------------------------- verdicts over synthetic side reports
def _side(variant, **per_rank) -> dict:
    return {"ranks": [{"rank": r, "variants": {variant: {k: v[r] for k, v in per_rank.items()}}} for r in (0, 1)]}


def _reports(loaded_ranks, control_ranks=None, next_loaded=None):
    saved, nxt = sharded(seed=1.0), sharded(seed=1.5, step=3)
    meta = {"content_metadata_supported": True, "content_metadata": {"distrib_optim_sharding_type": "dp_reshardable"},
            "common_sharding_type": "dp_reshardable", "children_after_save": ["SyncManager-1:1"]}
    save = _side("v", saved=saved, next=nxt, **{k: [v, v] for k, v in meta.items()})
    lmeta = {"loaded_content_metadata_supported": True,
             "loaded_content_metadata": {"distrib_optim_sharding_type": "dp_reshardable"},
             "loaded_common_sharding_type": "dp_reshardable"}
    control = [{"loaded": c} for c in (control_ranks or sharded(seed=9.0, step=2))]
    load = _side("v", fresh=sharded(seed=7.0, step=0), loaded=loaded_ranks, next=next_loaded or sharded(1.5, 3),
                 control=control, **{k: [v, v] for k, v in lmeta.items()})
    return save, load


def test_verdict_exact_and_the_control_is_caught():
    save, load = _reports(sharded(seed=1.0))
    verdict = lane.evaluate("v", save, load)
    assert verdict["result"] == "exact"
    assert verdict["control"]["outcome"] == "caught"


def test_verdict_a_control_that_looks_exact_fails_the_pair():
    save, load = _reports(sharded(seed=1.0), control_ranks=sharded(seed=1.0))
    verdict = lane.evaluate("v", save, load)
    assert verdict["control"]["outcome"] == "missed"
    assert lane.judge(verdict, []) == ("unexpected", None)


def test_verdict_lost_moments_are_a_loss():
    loaded = sharded(seed=1.0)
    for rank in loaded:
        for entries in rank.values():
            entries.pop("exp_avg", None)
    save, load = _reports(loaded)
    verdict = lane.evaluate("v", save, load)
    assert verdict["result"] == "loss" and verdict["lost"] == ["exp_avg"]


def test_verdict_a_different_continuation_is_a_loss():
    save, load = _reports(sharded(seed=1.0), next_loaded=sharded(seed=1.5, step=4))
    verdict = lane.evaluate("v", save, load)
    assert verdict["result"] == "loss" and verdict["stage"] == "next step"


def test_verdict_a_load_that_changes_nothing_is_invalid():
    save, load = _reports(sharded(seed=1.0))
    for rank in load["ranks"]:
        rank["variants"]["v"]["fresh"] = sharded(seed=1.0)[rank["rank"]]
    assert lane.evaluate("v", save, load)["result"] == "invalid"


def test_verdict_metadata_must_round_trip():
    save, load = _reports(sharded(seed=1.0))
    load["ranks"][0]["variants"]["v"]["loaded_common_sharding_type"] = "fully_reshardable"
    verdict = lane.evaluate("v", save, load)
    assert verdict["result"] == "metadata" and "fully_reshardable" in verdict["message"]


def test_verdict_a_writer_left_after_save():
    save, load = _reports(sharded(seed=1.0))
    save["ranks"][1]["variants"]["v"]["children_after_save"] = ["SyncManager-2:1", "Process-3"]
    assert lane.evaluate("v", save, load)["result"] == "writers"


# ------------------------------------------------------------------------------------------ expectations
ENTRY = {"id": "flat", "variants": ["default"], "saver": {"from": "0.16.0"}, "result": "error", "side": "save",
         "message": "flattened_range is not supported", "why": "probe"}


@pytest.mark.parametrize("old,new,variant,matches", [
    ("0.16.1", "0.17.1", "default", True), ("0.15.3", "0.16.1", "default", False),
    ("0.18.2", "0.19.2", "plain", False)])
def test_expectations_match_by_range_and_variant(old, new, variant, matches):
    assert bool(lane.expectations_for([ENTRY], old, new, variant)) is matches


def test_judge_expected_unexpected_and_fixed():
    failure = {"result": "error", "side": "save", "message": "CheckpointingException: ShardedTensor.flattened_range "
                                                             "is not supported."}
    assert lane.judge(failure, [ENTRY]) == ("expected", "flat")
    assert lane.judge({**failure, "message": "KeyError: 'step'"}, [ENTRY]) == ("unexpected", None)
    assert lane.judge(failure, []) == ("unexpected", None)
    assert lane.judge({"result": "exact", "control": {"outcome": "caught"}}, [ENTRY]) == ("fixed", "flat")
    assert lane.judge({"result": "exact", "control": {"outcome": "raised"}}, []) == ("exact", None)


def test_expected_data_loads_and_is_well_formed():
    entries = lane.load_expected()
    assert entries, "tests/ckpt/expected.yaml pins no expected failure"
    ids = [e["id"] for e in entries]
    assert len(ids) == len(set(ids))
    for e in entries:
        assert e["result"] in ("error", "loss", "metadata", "writers") and e["side"] in ("save", "load")
        assert isinstance(e["variants"], list) and e["message"].strip()


def test_messages_lose_temp_paths_and_addresses():
    text = f"FileNotFoundError: {tempfile.gettempdir()}/mcore_ckpt_lane_x1/ckpt/plain/common.pt at 0x7f00ab\nmore"
    assert lane.short_message(text) == "FileNotFoundError: <tmp> at 0x…"


def test_every_expected_entry_matches_a_recorded_result():
    """An entry that no recorded pair uses is stale data (or a typo that silently expects nothing)."""
    import json

    results = os.path.join(lane.RESULTS_DIR, "ckpt_lane.json")
    with open(results, encoding="utf-8") as fh:
        pairs = json.load(fh)["pairs"].values()
    used = {v.get("expected_id") for row in pairs for v in row["variants"].values()}
    assert {e["id"] for e in lane.load_expected()} <= used
