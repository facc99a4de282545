"""Which recall cases the gate can see: a case whose symbol lives in a package the candidate's wheel does
not contain (``megatron.training`` before 0.17.0) is counted in the "all four" row and left out of the visible row,
decided from the candidate's model alone, never by hand."""
from __future__ import annotations

from tools import surface_recall as study


def test_a_symbol_in_a_package_the_wheel_lacks_is_not_visible(tmp_path):
    gate = study.Gate(tmp_path, tmp_path, {})
    gate.models["0.13.0"] = {"modules": {"megatron.core": {}, "megatron.core.transformer": {}}}
    gate.models["0.17.0"] = {"modules": {"megatron.core": {}, "megatron.training": {}}}
    override = "megatron.training.get_model(vp_stage=)->model_provider"
    assert not gate.ships("0.13.0", override) and gate.ships("0.17.0", override)
    assert gate.ships("0.13.0", "megatron.core.transformer.gone_module.Name")  # a removed module: the gate sees it
    assert gate.ships("0.13.0", "SelfAttention.forward(rotary_pos_cos_sin=)")  # no package named: not decided


def test_recall_keeps_both_figures():
    rows = [{"shape": "override", "meant_to_see": True, "verdict": "MISSED", "visible": False},
            {"shape": "call", "meant_to_see": True, "verdict": "FOUND", "visible": True, "fix_lines": "FOUND"},
            {"shape": "call", "meant_to_see": True, "verdict": "MISSED", "fix_lines": "FOUND"}]  # no marker: visible
    by = study.recall_by_shape(rows)
    assert by["all four"] == {"cases": 3, "found": 1, "guarded": 0, "found_fix_lines": 2}
    assert by[study.VISIBLE] == {"cases": 2, "found": 1, "guarded": 0, "found_fix_lines": 2}
