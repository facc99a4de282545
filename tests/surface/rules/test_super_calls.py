"""``super().__init__(...)`` and ``super(Base, self)`` calls of a megatron base: checked against the next class in
the MRO; assignments the project makes on megatron modules are its own."""
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


def test_project_assignments_and_super_init(tmp_path, releases):
    project = make_project(tmp_path / "proj", {"a.py": """
        import megatron.core.parallel_state
        from megatron.core.distributed import DistributedDataParallel
        megatron.core.parallel_state.patched_in = lambda: 0
        megatron.core.parallel_state.patched_in()
        class MyDDP(DistributedDataParallel):
            def __init__(self, module):
                super().__init__(None, None, module, bucket_size=1)
        """})
    report = surface_gate(str(releases["0.2.0"]), project)
    assert {(f.line, f.kind, f.name) for f in report.findings} == {
        (8, c.UNEXPECTED_KEYWORD, "megatron.core.distributed.DistributedDataParallel(bucket_size=)")}


def test_super_with_a_named_base_calls_the_next_class_in_the_mro(tmp_path, wheels):
    report = gate(tmp_path, wheels, {"m.py": """
        from megatron.core.llava import LLaVAModel
        class M(LLaVAModel):
            def __init__(self, config):
                super(LLaVAModel, self).__init__(config=config)
        class N(LLaVAModel):
            def __init__(self, config):
                super(N, self).__init__(config=config)
        class P(LLaVAModel):
            def __init__(self, config):
                super(LLaVAModel, self).__init__(config=config, gone=1)
        """})
    # M: MegatronModule(config) is right; N: LLaVAModel needs vision, language, extra; P: MegatronModule has no gone
    assert where(report) == {("m.py", 8, c.MISSING_REQUIRED), ("m.py", 11, c.UNEXPECTED_KEYWORD)}
