"""Both directions on the small synthetic history: an upgrade reports each finding kind with file, line and
history; the floor direction reports what an older release lacks."""
from __future__ import annotations

from compat.tooling.gate.surface import check as c
from compat.tooling.gate.surface.release_gate import surface_gate

from .builders import UPGRADE_PROJECT, make_project, names


def findings(report, kind=None, guarded=None):
    return [f for f in report.findings if (kind is None or f.kind == kind)
            and (guarded is None or f.guarded == guarded)]


def test_upgrade_reports_each_kind_with_file_line_and_history(tmp_path, releases):
    project = make_project(tmp_path / "proj", UPGRADE_PROJECT)
    report = surface_gate(str(releases["0.2.0"]), project)
    by_kind = {f.kind: f for f in report.findings}
    assert by_kind[c.MISSING_MODULE].name == "megatron.core.distributed.custom_fsdp"
    assert by_kind[c.MISSING_MODULE].line == 3 and by_kind[c.MISSING_MODULE].path == "app/model.py"
    assert by_kind[c.MISSING_MODULE].history["removed_in"] == "0.2.0"
    member = by_kind[c.MISSING_MEMBER]
    assert member.name == "megatron.core.enums.ModelType.encoder_and_decoder" and member.line == 10
    assert member.close == ["encoder_or_decoder"]
    assert member.history == {"works_in": ["0.1.0..0.1.5"], "last_in": "0.1.5", "removed_in": "0.2.0"}
    required = by_kind[c.MISSING_REQUIRED]
    assert required.name == "megatron.core.utils.get_batch_on_this_cp_rank(is_hybrid_cp=)" and required.line == 14
    assert by_kind[c.TOO_MANY_POSITIONAL].line == 13
    assert c.UNEXPECTED_KEYWORD not in by_kind  # total_tokens exists in 0.2.0
    assert all(not f.guarded for f in report.findings) and report.exit_code == 1


def test_floor_direction_reports_what_an_older_release_lacks(tmp_path, releases):
    project = make_project(tmp_path / "proj", UPGRADE_PROJECT)
    report = surface_gate(str(releases["0.1.0"]), project)
    keyword = findings(report, c.UNEXPECTED_KEYWORD)
    assert names(keyword) == {"megatron.core.packed_seq_params.PackedSeqParams(total_tokens=)"}
    assert keyword[0].history["added_in"] == "0.2.0" and keyword[0].line == 11
    assert keyword[0].close == [] and "added in 0.2.0" in keyword[0].instead
    assert not findings(report, c.MISSING_MODULE) and not findings(report, c.MISSING_MEMBER)
