"""``--against``: findings the against release has too are set apart (matched by location and use, also where the
failure's shape changed); a package the against wheel does not ship hides no failure."""
from __future__ import annotations

import pytest

from compat.tooling.gate.surface import check as c
from compat.tooling.gate.surface.release_gate import surface_gate

from .builders import PAIR_0_3_0 as OLD
from .builders import make_project, make_wheel, pair_releases


@pytest.fixture
def wheels(tmp_path, monkeypatch):
    """Releases 0.3.0 and 0.4.0 of the candidate pair in builders.py."""
    return pair_releases(tmp_path, monkeypatch)


def test_a_package_the_against_wheel_does_not_ship_hides_no_failure(tmp_path, releases):
    project = make_project(tmp_path / "proj", {"a.py": "from megatron.training.arguments import gone_in_new\n"})
    report = surface_gate(str(releases["0.2.0"]), project, against=str(releases["0.1.0"]))
    assert [(f.kind, f.on_against) for f in report.findings] == [(c.MISSING_NAME, False)]  # 0.1.0 does not know it
    assert report.exit_code == 1


def test_against_separates_failures_that_already_exist(tmp_path, releases):
    project = make_project(tmp_path / "proj", {"a.py": """
        from megatron.core.enums import ModelType
        from megatron.core import parallel_state as mpu
        ModelType.encoder_and_decoder
        mpu.never_existed()
        """})
    report = surface_gate(str(releases["0.2.0"]), project, against=str(releases["0.1.0"]))
    flags = {f.name: f.on_against for f in report.findings}
    assert flags == {"megatron.core.enums.ModelType.encoder_and_decoder": False,
                     "megatron.core.parallel_state.never_existed": True}
    assert report.exit_code == 1 and [f.line for f in report.breaking] == [4]


def test_against_matches_a_failure_whose_shape_changed(tmp_path, wheels):
    gone = {**OLD, "megatron/core/strategies/base.py": None}
    older = make_wheel(tmp_path / "w", "0.2.0", {**OLD, "megatron/core/strategies/base.py": "X = 1\n"})
    project = make_project(tmp_path / "proj", {"a.py": "from megatron.core.strategies.base import Strategy\n"})
    newer = make_wheel(tmp_path / "w", "0.5.0", gone)
    report = surface_gate(str(newer), project, against=str(older))
    (finding,) = report.findings
    # missing name on the older release, missing module on the newer: the same failure of the same import
    assert finding.kind == c.MISSING_MODULE and finding.on_against is True and report.exit_code == 0


def test_a_call_site_misfit_the_against_release_has_too_is_set_apart(tmp_path, wheels):
    project = make_project(tmp_path / "proj", {"b.py": """
        from megatron.core.backend import Backend
        class Mine(Backend):
            def compute(self):
                return None
        """})
    # both releases pass x positionally, which this override cannot take; only 0.4.0 passes mask=
    report = surface_gate(str(wheels["0.4.0"]), project, against=str(wheels["0.3.0"]))
    got = {(f.name.rsplit(".", 1)[1], f.on_against) for f in report.findings if f.kind == c.OVERRIDE}
    assert got == {("compute(…)", True), ("compute(mask=)", False)}
    assert report.exit_code == 1
