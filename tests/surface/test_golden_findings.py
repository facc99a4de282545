"""Golden findings: the surface gate on each small project of tests/surface/golden/ against its candidate tree (and
the release before it) reports exactly the findings in the case's expected.json. A safety net for changes to
compat/tooling/gate/surface/: a difference is either a regression or a golden change to name in the commit."""
from __future__ import annotations

import json

import pytest

from tools import golden_findings as golden

CASES = golden.case_names()
HOW_TO_UPDATE = ("if the change is intended, run `python -m tools.golden_findings --write {case}` and name the "
                 "golden change and why in the commit message")


@pytest.mark.parametrize("case", CASES)
def test_the_gate_reports_the_golden_findings(case):
    # the wheel and model caches are isolated by tests/conftest.py (MCORE_COMPAT_CACHE, MCORE_COMPAT_STATE)
    diff = golden.differences(golden.expected(golden.CASES_DIR / case), golden.run_case(golden.CASES_DIR / case))
    if diff:
        pytest.fail(f"{case}: the findings changed ({HOW_TO_UPDATE.format(case=case)}):\n" + "\n".join(diff),
                    pytrace=False)


def test_a_changed_finding_is_reported_as_a_difference():
    want = golden.expected(golden.CASES_DIR / "call_signatures")
    assert want and golden.differences(want, want) == []
    changed = [dict(want[0], line=want[0]["line"] + 1)] + want[1:]
    diff = golden.differences(want, changed)
    assert [line[0] for line in diff if line[:1] in "+-" and line[:3] not in ("---", "+++")] == ["-", "+"]
    assert golden.differences(want, want[1:]) and golden.differences(want[1:], want)  # one lost, one gained


def test_every_case_has_its_files_and_says_what_it_exercises():
    assert 18 <= len(CASES) <= 40
    empty = []
    for case in CASES:
        folder = golden.CASES_DIR / case
        assert [name for name in golden.REQUIRED if not (folder / name).exists()] == [], case
        assert (folder / "candidate" / "megatron" / "core" / "package_info.py").is_file(), case
        meta = golden.meta(folder)
        assert set(meta) <= {"family", "why", "wheel"}, case
        assert meta.get("family", "").strip(), f"{case}: case.json names no rule family"
        why = meta.get("why", "").strip()
        assert why.endswith(".") and why.count(". ") == 0, f"{case}: case.json's why is not one sentence"
        findings = json.loads((folder / "expected.json").read_text(encoding="utf-8"))
        assert all(set(golden.FIELDS) == set(f) for f in findings), case
        assert findings == sorted(findings, key=lambda f: (f["path"], f["line"], f["name"], f["kind"])), case
        if not findings:
            empty.append(case)
    assert len(empty) <= 2, f"cases reporting nothing: {empty}"


def test_the_regeneration_tool_agrees_and_refuses_an_unknown_case(capsys):
    assert golden.main(["call_signatures", "probes"]) == 0
    assert "every case agrees" in capsys.readouterr().out
    with pytest.raises(SystemExit):
        golden.main(["no_such_case"])
