"""The equivalence lane's verdicts in the gate report: compat/tooling/gate/training.py (no torch)."""
from __future__ import annotations

import pytest

from compat.tooling.gate import GateReport, lanes, training

PAIRS = {"pairs": [
    {"old": "0.18.2", "new": "0.19.2", "variants": {
        "canonical": {"status": "identical", "first": "identical", "why": None},
        "defaults": {"status": "expected", "first": "step 3: grad of decoder.x.weight", "why": "a `new` kernel\n## X"},
        "tp2": {"status": "unexpected", "first": "step 0: loss", "why": None}}}]}


def _report(candidate, against):
    return GateReport(candidate=candidate or "x.whl", source="test", kind="wheel", against=against, changes=[],
                      facts={"version": candidate, "ddp": {"sha256": "0" * 64}})


@pytest.fixture
def lane_data(monkeypatch):
    monkeypatch.setattr(lanes, "load_json", lambda name: PAIRS if name == "training_lane.json" else {"pairs": []})


def test_a_measured_pair_says_which_variants_are_identical_and_where_others_part(lane_data):
    lines = training.sentences(training.lane_verdict("0.19.2", "0.18.2"))
    assert lines[0].startswith("training with the canonical config") and "bit-identical" in lines[0]
    assert "from step 3: grad of decoder.x.weight (expected)" in lines[1]
    assert "\n" not in lines[1] and "## X" not in lines[1].split("(expected)")[0]
    assert lines[2].startswith("UNEXPECTED: training with `tp2`") and "(unexpected)" in lines[2]


def test_a_candidate_without_a_lane_result_names_the_session(lane_data):
    verdict = training.lane_verdict("0.20.0", "0.19.2")
    assert verdict == {"old": "0.19.2", "new": "0.20.0", "status": "not run", "session": "equiv"}
    assert "nox -s equiv" in training.sentences(verdict)[0]


def test_nothing_to_say_without_a_version_or_for_an_older_candidate(lane_data):
    assert training.lane_verdict(None, "0.19.2") is None
    assert training.lane_verdict("not a version", "0.19.2") is None
    assert training.lane_verdict("0.17.1", "0.19.2") is None
    assert training.markdown_section(_report(None, "0.19.2")) == []


def test_the_gate_report_has_a_training_section(lane_data):
    text = _report("0.19.2", "0.18.2").to_markdown()
    assert "\n## Training\n" in text
    assert text.index("## Training") > text.index("## Informational")


def test_the_committed_data_file_reads():
    data = lanes.load_json("training_lane.json")
    assert data["pairs"], "compat/tooling/data/training_lane.json holds the lane's pairs"
    for pair in data["pairs"]:
        assert set(pair) == {"old", "new", "variants"}
        assert {v["status"] for v in pair["variants"].values()} <= {"identical", "expected"}
