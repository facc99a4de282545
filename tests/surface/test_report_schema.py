"""The JSON a surface report writes keeps its field names (scripts read them), and every kind in it is one of the
kinds the gate defines."""
from __future__ import annotations

import json

from compat.tooling.gate.surface import detectors
from compat.tooling.gate.surface.kinds import FindingKind, GuardKind

REPORT_FIELDS = {"candidate", "source", "project", "against", "exit_code", "summary", "scan", "history_releases",
                 "notes", "findings"}
FINDING_FIELDS = {"path", "line", "name", "kind", "guarded", "guard", "instead", "close", "history", "use",
                  "also_at", "on_against", "rule"}

CANDIDATE = {"megatron/core/utils.py": "def helper(a, *, b=1):\n    pass\n"}
PROJECT = {"app/__init__.py": "", "app/run.py": """
    from megatron.core.utils import helper, gone
    from megatron.core import absent_module
    helper(1, c=2)
    try:
        from megatron.core.utils import also_gone
    except ImportError:
        also_gone = None
    """}


def test_report_and_finding_fields_are_pinned(surface_report):
    data = json.loads(json.dumps(surface_report(PROJECT, CANDIDATE).to_dict()))
    assert set(data) == REPORT_FIELDS
    assert data["findings"] and all(set(f) == FINDING_FIELDS for f in data["findings"])
    kinds = {f["kind"] for f in data["findings"]}
    assert kinds <= {k.value for k in FindingKind}
    assert {"missing name", "unexpected keyword"} <= kinds
    assert {f["rule"] for f in data["findings"]} <= {rule.id for rule in detectors.rules()}
    assert {"imports", "megatron_calls"} <= {f["rule"] for f in data["findings"]}
    assert any(f["guarded"] and f["guard"].startswith(GuardKind.TRY.value) for f in data["findings"])


def test_kinds_are_their_text():
    assert FindingKind.MISSING_NAME == "missing name" and hash(FindingKind.MISSING_NAME) == hash("missing name")
    assert f"{GuardKind.TRY}" == str(GuardKind.TRY) == "try/except"
    assert {"try/except": 1}[GuardKind.TRY] == 1
    assert len({k.value for k in FindingKind}) == len(FindingKind)  # no two kinds share a text
    assert len({k.value for k in GuardKind}) == len(GuardKind)


def test_a_finding_is_a_frozen_record_with_its_rule(surface_report):
    import dataclasses

    import pytest

    finding = surface_report(PROJECT, CANDIDATE).findings[0]
    with pytest.raises(dataclasses.FrozenInstanceError):
        finding.guarded = True
    assert finding.rule in {rule.id for rule in detectors.rules()}
