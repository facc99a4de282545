"""The rule catalogue in docs/surface-gate.md is generated from the detectors' Rule records and is current; every
rule has a golden case whose findings come from it, and a row in the catalogue."""
from __future__ import annotations

from pathlib import Path

from compat.tooling.gate.surface import detectors
from tools import rule_catalogue

DOC = Path(rule_catalogue.TARGET)


def test_the_catalogue_is_current_and_every_rule_has_a_golden_case():
    assert rule_catalogue.problems() == []
    assert rule_catalogue.main(["--check"]) == 0, "run python -m tools.rule_catalogue"


def test_every_rule_has_a_row_and_a_section():
    text = DOC.read_text(encoding="utf-8")
    for rule in detectors.rules():
        assert f"| [`{rule.id}`](#{rule.id}) | {rule.sees} |" in text
        assert f"### `{rule.id}`" in text


def test_a_rule_without_a_golden_case_is_named(monkeypatch):
    cases = rule_catalogue.golden_cases()
    monkeypatch.setattr(rule_catalogue, "golden_cases", lambda: {k: v for k, v in cases.items() if k != "partials"})
    assert rule_catalogue.problems() == ["rule partials has no golden case: add a project under tests/surface/golden/"
                                         " whose findings come from it"]


def test_a_stale_catalogue_is_reported(monkeypatch, tmp_path):
    stale = tmp_path / "surface-gate.md"
    stale.write_text(DOC.read_text(encoding="utf-8").replace("## Rule catalogue", "## Rules"), encoding="utf-8")
    monkeypatch.setattr(rule_catalogue, "TARGET", stale)
    assert rule_catalogue.main(["--check"]) == 1
