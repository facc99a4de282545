"""hasattr/getattr probes: the other branch of a probe runs only where the attribute is missing, and a branch that
runs only where a probed member exists is dead without it."""
from __future__ import annotations

import pytest

from compat.tooling.gate.surface.release_gate import surface_gate

from ..builders import gate_on_pair as gate
from ..builders import make_project, pair_releases


@pytest.fixture
def wheels(tmp_path, monkeypatch):
    """Releases 0.3.0 and 0.4.0 of the candidate pair in builders.py."""
    return pair_releases(tmp_path, monkeypatch)


def test_the_other_branch_of_a_probe_runs_only_where_the_attribute_is_missing(tmp_path, releases):
    project = make_project(tmp_path / "proj", {"a.py": """
        from megatron.core import parallel_state as mpu
        from megatron.core.enums import ModelType
        def group():
            if hasattr(mpu, "get_data_parallel_rank"):
                return mpu.get_data_parallel_rank()
            else:
                return ModelType.encoder_and_decoder
        def other():
            if not hasattr(mpu, "get_data_parallel_rank"):
                return ModelType.encoder_and_decoder
            return getattr(mpu, "get_new", None) or ModelType.encoder_and_decoder
        def missing_probe():
            if hasattr(mpu, "get_new"):
                return 1
            return ModelType.encoder_and_decoder
        """})
    report = surface_gate(str(releases["0.2.0"]), project)
    by_line = {f.line: f for f in report.findings if "encoder_and_decoder" in f.name}
    assert by_line[8].guarded and "not taken" in by_line[8].guard
    assert by_line[11].guarded and "not taken" in by_line[11].guard
    assert not by_line[12].guarded  # get_new is missing: the `or` branch runs
    assert not by_line[16].guarded  # get_new is missing: the code after the early return runs


def test_a_branch_that_runs_only_where_a_probed_member_exists_is_dead_without_it(tmp_path, wheels):
    report = gate(tmp_path, wheels, {"a.py": """
        from megatron.core import mpu
        from megatron.core.module import MegatronModule
        def split(kind):
            if kind == getattr(MegatronModule, "gone_kind", None):
                return mpu.get_tensor_and_expert_parallel_rank()
            if hasattr(mpu, "get_tensor_model_parallel_rank"):
                return mpu.get_tensor_and_expert_parallel_rank()
        """})
    assert {(f.line, f.guarded) for f in report.findings} == {(5, True), (6, True), (8, False)}  # 5: the probe itself
