"""Members read off megatron classes and modules: an attribute the project assigns on a megatron module is its own
(with what hangs off it), attributes a megatron base no longer sets on ``self``, and uses through an alias of a
missing attribute point at the read."""
from __future__ import annotations

import pytest

from compat.tooling.gate.surface import check as c

from ..builders import PAIR_0_3_0 as OLD
from ..builders import PAIR_0_4_0 as NEW
from ..builders import gate_on_pair as gate
from ..builders import make_wheel, pair_releases


@pytest.fixture
def wheels(tmp_path, monkeypatch):
    """Releases 0.3.0 and 0.4.0 of the candidate pair in builders.py."""
    return pair_releases(tmp_path, monkeypatch)


def test_an_attribute_the_project_assigns_is_its_own_with_what_hangs_off_it(tmp_path, wheels):
    report = gate(tmp_path, wheels, {"s.py": """
        from megatron.core.strategies import base as ckpt_base
        from megatron.core.strategies.async_utils import AsyncCallsQueue
        class Strategy:
            def __init__(self):
                ckpt_base.async_calls = AsyncCallsQueue(persistent=True)
            def save(self, request):
                ckpt_base.async_calls.schedule_async_request(request)
                ckpt_base.other_thing.run()
        """})
    assert {(f.line, f.name) for f in report.findings} == {(9, "megatron.core.strategies.base.other_thing")}


def test_uses_through_an_alias_of_a_missing_attribute_point_at_the_read(tmp_path, wheels):
    report = gate(tmp_path, wheels, {"v.py": """
        import megatron.core.parallel_state as ps
        def reuse():
            original = ps.get_tensor_and_expert_parallel_rank
            print(original.__name__)
            return original.__globals__
        """})
    assert [(f.line, f.also_at) for f in report.findings] == [(4, [5, 6])]


def test_self_attributes_the_base_no_longer_sets(tmp_path, wheels):
    old_attention = OLD["megatron/core/attention.py"].replace(
        "super().__init__(config)", "super().__init__(config)\n                self.model_comm_pgs = model_comm_pgs")
    new_attention = NEW["megatron/core/attention.py"].replace(
        "super().__init__(config)", "super().__init__(config)\n                self.pg_collection = pg_collection")
    cache = tmp_path / "cache" / "wheels"
    make_wheel(cache, "0.3.0", {**OLD, "megatron/core/attention.py": old_attention})
    make_wheel(cache, "0.4.0", {**NEW, "megatron/core/attention.py": new_attention})
    report = gate(tmp_path, wheels, {"a.py": """
        from megatron.core.attention import SelfAttention
        class Mine(SelfAttention):
            def forward(self, hidden_states, attention_mask, key_value_states=None, attention_bias=None):
                groups = self.model_comm_pgs
                self.mine = 1
                return self.mine, self.config, self.anything_else, self.model_comm_pgs
        class Mixed(SelfAttention, dict):
            def forward(self, hidden_states, attention_mask, key_value_states=None, attention_bias=None):
                return self.model_comm_pgs
        """})
    (finding,) = [f for f in report.findings if f.kind == c.MISSING_MEMBER]
    assert (finding.line, finding.name, finding.also_at) == (5, "megatron.core.attention.SelfAttention.model_comm_pgs", [7])
    assert "0.3.0" in finding.instead and not finding.guarded
