"""Version checks as guards: flags named as megatron versions (``mcore_017``) and megatron version comparisons
guard; flags about another package or data do not."""
from __future__ import annotations

import pytest

from compat.tooling.gate.surface import check as c
from compat.tooling.gate.surface.release_gate import surface_gate

from ..builders import breaking_places as where
from ..builders import gate_on_pair as gate
from ..builders import make_project, pair_releases


@pytest.fixture
def wheels(tmp_path, monkeypatch):
    """Releases 0.3.0 and 0.4.0 of the candidate pair in builders.py."""
    return pair_releases(tmp_path, monkeypatch)


def test_version_flags_by_name_and_data_flags_are_not_guards(tmp_path, releases):
    project = make_project(tmp_path / "proj", {"a.py": """
        from megatron.core.packed_seq_params import PackedSeqParams
        from .compat import mcore_017, HAVE_TE
        def f(batch):
            has_packed = batch is not None
            if mcore_017:
                PackedSeqParams(total_tokens=1)
            if HAVE_TE:
                PackedSeqParams(total_tokens=2)
            if has_packed:
                PackedSeqParams(total_tokens=3)
        """})
    report = surface_gate(str(releases["0.1.0"]), project)
    # HAVE_TE comes from elsewhere and is about another package: it does not guard a PackedSeqParams keyword
    assert {(f.line, f.guarded) for f in report.findings} == {(7, True), (9, False), (11, False)}


def test_megatron_version_checks_still_guard(tmp_path, wheels):
    report = gate(tmp_path, wheels, {"a.py": """
        from megatron.core import mpu
        from packaging.version import Version
        import megatron.core
        def rank():
            if Version(megatron.core.__version__) < Version("0.4.0"):
                return mpu.get_tensor_and_expert_parallel_rank()
        """})
    assert where(report, guarded=True) == {("a.py", 7, c.MISSING_NAME)}
