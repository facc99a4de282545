"""The equivalence lane's comparison and judgement on hand-made records (no torch, no megatron)."""
from __future__ import annotations

import copy
import os

import diffs

from tools.lane_common import load_script

lane = load_script("tests/equiv/lane.py", "equiv_lane")  # tests/ckpt has a lane.py too: a name of its own

NAMES = ["embedding.word_embeddings.weight", "decoder.layers.0.mlp.linear_fc1.weight"]


def _record(losses=(4.8, 4.7), grad="g", param="p"):
    steps = [{"step": i, "loss": loss, "loss_hex": float(loss).hex(), "grad_norm": 1.5, "num_zeros": 3,
              "grad_sha256": {n: f"{grad}{i}{n}" for n in NAMES}, "param_sha256": {n: f"{param}{i}{n}" for n in NAMES}}
             for i, loss in enumerate(losses)]
    return {"param_names": list(NAMES), "initial_sha256": {n: "init" + n for n in NAMES}, "steps": steps,
            "memory": [{"grad_buffer_bytes": 8}, {"grad_buffer_bytes": 8}],
            "built": {"ddp": {"grad_reduce_in_fp32": True, "bucket_size": None}}}


def test_identical_runs_have_no_first_difference():
    a = _record()
    assert diffs.first_difference(a, copy.deepcopy(a)) is None
    assert diffs.describe(None) == "identical"


def test_the_first_difference_is_the_earliest_quantity_in_training_order():
    a, b = _record(), _record()
    b["steps"][1]["param_sha256"][NAMES[1]] = "other"
    b["steps"][1]["grad_norm"] = 1.25
    first = diffs.first_difference(a, b)
    assert diffs.describe(first) == "step 1: grad_norm"
    assert diffs.size(first, None, None) == {"abs": 0.25, "rel": 0.25 / 1.5}
    b["steps"][1]["grad_sha256"][NAMES[0]] = "other"
    assert diffs.describe(diffs.first_difference(a, b)) == f"step 1: grad of {NAMES[0]}"
    b["steps"][0]["loss_hex"] = 4.81.hex()
    b["steps"][0]["loss"] = 4.81
    assert diffs.describe(diffs.first_difference(a, b)) == "step 0: loss"


def test_a_different_start_or_name_set_is_reported_before_any_step():
    a, b = _record(), _record()
    b["initial_sha256"][NAMES[1]] = "x"
    assert diffs.describe(diffs.first_difference(a, b)) == f"before training: initial weights of {NAMES[1]}"
    c = _record()
    c["param_names"] = [NAMES[0], "decoder.layers.0.mlp.fc1.weight"]
    first = diffs.first_difference(a, c)
    assert first["what"] == "parameter names" and first["old"] == [NAMES[1]]


def test_tensor_size_without_tensor_files_says_so():
    first = {"step": 0, "what": "grad", "tensor": NAMES[0], "old": None, "new": None}
    assert diffs.size(first, None, "/nonexistent.pt") == {"max_abs": None, "note": "tensor files not available"}


def test_memory_and_config_changes_list_only_what_differs():
    a, b = _record(), _record()
    assert diffs.memory_changes(a, b) == {} and diffs.config_changes(a["built"], b["built"]) == {}
    b["memory"][1]["grad_buffer_bytes"] = 4
    b["built"]["ddp"]["grad_reduce_in_fp32"] = False
    assert diffs.memory_changes(a, b) == {"grad_buffer_bytes": [[8, 8], [8, 4]]}
    assert diffs.config_changes(a["built"], b["built"]) == {"ddp": {"grad_reduce_in_fp32": [True, False]}}
    assert diffs.loss_gap(a, _record(losses=(4.8, 4.5)))["step"] == 1


ENTRY = {"id": "e", "variants": ["defaults"], "old": {"from": "0.13.0"}, "new": {"before": "0.15.0"},
         "first": "step 0: loss", "why": "w"}


def test_judge_expected_unexpected_vanished():
    assert lane.judge("step 0: loss", "0.13.1", "0.14.0", "defaults", [ENTRY]) == ("expected", "e")
    assert lane.judge("step 2: grad of x", "0.13.1", "0.14.0", "defaults", [ENTRY]) == ("unexpected", None)
    assert lane.judge("identical", "0.13.1", "0.14.0", "defaults", [ENTRY]) == ("vanished", "e")
    # outside the entry's ranges or variants it does not apply
    assert lane.judge("identical", "0.14.0", "0.15.3", "defaults", [ENTRY]) == ("identical", None)
    assert lane.judge("step 0: loss", "0.13.1", "0.14.0", "canonical", [ENTRY]) == ("unexpected", None)


def test_sent_changes_name_each_kwarg_with_both_values():
    old = {"ddp": {"grad_reduce_in_fp32": True}, "transformer": {"num_layers": 2}}
    new = {"ddp": {"grad_reduce_in_fp32": True, "use_custom_fsdp": False}, "transformer": {"num_layers": 2}}
    assert lane.sent_changes(old, new) == {"ddp": {"use_custom_fsdp": [None, False]}}


def test_gate_changes_come_from_the_registry():
    changes = lane.gate_changes("0.17.1", "0.18.2")
    assert set(changes) == {"transformer", "optimizer", "ddp"}
    assert changes["transformer"]["defaults"]["cuda_graph_use_single_mempool"] == ["False", "True"]


def test_the_canonical_variant_pins_drifting_defaults_and_the_defaults_variant_does_not():
    versions = lane.lane_versions()
    plan = lane.plan_for(versions[-1], versions)
    by_id = {v["id"]: v for v in plan["variants"]}
    user = lane._user_config()
    assert by_id["defaults"]["overrides"]["transformer"] == user["transformer"]
    pinned = by_id["canonical"]["pinned"]["transformer"]
    assert pinned, "the lane's pins have drifting transformer defaults, so something is pinned"
    for name in pinned:
        assert name not in user["transformer"]
    # the FP32 resolver is on: compat sends grad_reduce_in_fp32=True although the user did not set it
    assert by_id["defaults"]["sent"]["ddp"]["grad_reduce_in_fp32"] is True


def test_committed_training_verdicts_match_the_results():
    with open(lane.TRAINING_DATA, encoding="utf-8") as fh:
        committed = fh.read()
    results = lane._read_json(os.path.join(lane.RESULTS_DIR, "equivalence.json"), {})
    assert committed == lane.verdicts_text(results)
