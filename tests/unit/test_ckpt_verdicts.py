"""The checkpoint lane's verdicts as gate data: tools/ckpt_verdicts.py and compat/tooling/gate/ckpt.py (no torch)."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from compat.tooling.gate import GateReport
from compat.tooling.gate import ckpt as gate_ckpt

ROOT = Path(__file__).resolve().parents[2]

from tools import ckpt_verdicts  # noqa: E402  (tools/: tests/conftest.py appends the checkout)

RESULTS = ROOT / "benchmarks" / "results" / "ckpt_lane.json"


def _report(candidate, against):
    return GateReport(candidate=candidate or "x.whl", source="test", kind="wheel", against=against, changes=[],
                      facts={"version": candidate, "ddp": {"sha256": "0" * 64}})


def test_committed_verdicts_are_generated_from_the_committed_results():
    results = json.loads(RESULTS.read_text(encoding="utf-8"))
    committed = ROOT / "compat" / "tooling" / "data" / "ckpt_lane.json"
    assert ckpt_verdicts.render(results) == committed.read_text(encoding="utf-8")
    assert ckpt_verdicts.main(["--check"]) == 0


def test_verdicts_are_deterministic_and_ordered_by_release():
    results = json.loads(RESULTS.read_text(encoding="utf-8"))
    shuffled = {**results, "pairs": dict(reversed(list(results["pairs"].items())))}
    assert ckpt_verdicts.render(shuffled) == ckpt_verdicts.render(results)
    loaded_on = [p["loaded_on"] for p in ckpt_verdicts.verdicts(results)["pairs"]]
    assert loaded_on == sorted(loaded_on, key=lambda v: tuple(int(x) for x in v.split(".")))


def test_check_reports_drift(tmp_path):
    out = tmp_path / "ckpt_lane.json"
    out.write_text("{}\n", encoding="utf-8")
    assert ckpt_verdicts.main(["--check", "--out", str(out)]) == 1
    assert ckpt_verdicts.main(["--out", str(out)]) == 0
    assert ckpt_verdicts.main(["--check", "--out", str(out)]) == 0


def test_gate_report_names_the_pair_verdict():
    report = _report("0.19.2", "0.18.2")
    text = "\n".join(gate_ckpt.markdown_section(report))
    assert "## Checkpoints" in text
    assert "`dp_reshardable`" in text and "load exactly on `0.19.2`" in text
    assert "the API default (no sharding type given)" in text and "cannot be saved on `0.18.2`" in text
    verdict = report.to_dict()["checkpoints"]
    assert verdict["saved_on"] == "0.18.2" and verdict["status"] == "measured"
    assert "## Checkpoints" in report.to_markdown()


def test_gate_a_new_candidate_names_the_session_to_run():
    report = _report("0.20.0", "0.19.2")
    assert report.to_dict()["checkpoints"] == {"saved_on": "0.19.2", "loaded_on": "0.20.0", "status": "not run",
                                               "session": "ckpt-0.19.2-to-0.20.0"}
    assert "`nox -s ckpt-0.19.2-to-0.20.0`" in "\n".join(gate_ckpt.markdown_section(report))


@pytest.mark.parametrize("candidate,against", [(None, "0.19.2"), ("0.12.3", "0.19.2")])
def test_gate_says_nothing_without_a_pair(candidate, against):
    assert gate_ckpt.markdown_section(_report(candidate, against)) == []


def test_gate_reports_a_loss_loudly():
    verdict = {"status": "measured", "saved_on": "0.17.1", "loaded_on": "0.18.2", "exact": [], "failures": [],
               "losses": [{"variant": "dp_reshardable", "lost": ["exp_avg", "exp_avg_sq"], "message": "x `y`"}]}
    (line,) = gate_ckpt.sentences(verdict)
    assert line.startswith("**`dp_reshardable` saved on `0.17.1` loses `exp_avg`, `exp_avg_sq`")
    assert "`` x `y` ``" in line  # messages go through the report's inline-code escaping
