"""Calls checked against the candidate's signatures: an unexpected keyword (and what ``**kwargs`` accepts),
too many positionals, a positional that now lands on a keyword parameter given again, a missing required
argument described as one."""
from __future__ import annotations

import pytest

from compat.tooling.gate.surface import check as c
from compat.tooling.gate.surface.release_gate import surface_gate

from ..builders import RELEASE_0_2_0 as NEW
from ..builders import gate_on_pair as gate
from ..builders import make_project, make_wheel, pair_releases


@pytest.fixture
def wheels(tmp_path, monkeypatch):
    """Releases 0.3.0 and 0.4.0 of the candidate pair in builders.py."""
    return pair_releases(tmp_path, monkeypatch)


def test_unexpected_keyword_on_a_plain_function_and_kwargs_acceptance(tmp_path, releases):
    project = make_project(tmp_path / "proj", {"a.py": """
        from megatron.core import parallel_state
        parallel_state.get_data_parallel_rank(partial_data_parallel=True)
        parallel_state.initialize_model_parallel(2, anything_goes=1)
        parallel_state.initialize_model_parallel(2, 3)
        """})
    report = surface_gate(str(releases["0.2.0"]), project)
    got = {(f.line, f.kind, f.name) for f in report.findings}
    assert got == {(3, c.UNEXPECTED_KEYWORD, "megatron.core.parallel_state.get_data_parallel_rank(partial_data_parallel=)"),
                   (5, c.TOO_MANY_POSITIONAL, "megatron.core.parallel_state.initialize_model_parallel(…)")}


def test_a_positional_argument_that_now_lands_on_a_keyword_parameter(tmp_path, releases):
    files = {**NEW, "megatron/core/optim.py": """
        def get_megatron_optimizer(config, model_chunks, config_overrides=None, use_gloo_process_groups=True):
            pass
        """}
    wheel = make_wheel(tmp_path / "w", "0.3.0", files)
    project = make_project(tmp_path / "proj", {"a.py": """
        from megatron.core.optim import get_megatron_optimizer
        get_megatron_optimizer(cfg, model, no_wd, scale_lr,
                               use_gloo_process_groups=False)
        get_megatron_optimizer(cfg, model, use_gloo_process_groups=False)
        """})
    (finding,) = surface_gate(str(wheel), project).findings
    assert (finding.kind, finding.line) == (c.GIVEN_TWICE, 4)  # the keyword's own line
    assert finding.name == "megatron.core.optim.get_megatron_optimizer(use_gloo_process_groups=)"


def test_a_missing_required_argument_is_described_as_one(tmp_path, wheels):
    report = gate(tmp_path, wheels, {"a.py": """
        from megatron.core.ddp import DistributedDataParallel
        DistributedDataParallel(None, module=None)
        """})
    (finding,) = report.findings
    assert (finding.kind, finding.name) == (c.MISSING_REQUIRED, "megatron.core.ddp.DistributedDataParallel(ddp_config=)")
    assert "ddp_config" not in finding.close
    assert "ddp_config is required from 0.4.0 (the call works up to 0.3.0)" in finding.instead
    assert "removed" not in finding.instead
