"""A project's monkeypatch of a megatron callable: a wrapper that forwards to the original still has the
original's keyword breaks checked; a replacement with its own signature is the project's."""
from __future__ import annotations

import pytest

from compat.tooling.gate.surface import check as c

from ..builders import breaking_places as where
from ..builders import gate_on_pair as gate
from ..builders import pair_releases


@pytest.fixture
def wheels(tmp_path, monkeypatch):
    """Releases 0.3.0 and 0.4.0 of the candidate pair in builders.py."""
    return pair_releases(tmp_path, monkeypatch)


def test_a_forwarding_wrapper_patch_still_checks_the_original(tmp_path, wheels):
    files = {"patch.py": """
        def apply():
            from megatron.core import specs
            original = specs.get_moe_module_spec
            def patched(*args, **kwargs):
                return original(*args, **kwargs)
            specs.get_moe_module_spec = patched
        """, "spec.py": """
        from megatron.core.specs import get_moe_module_spec
        moe = get_moe_module_spec(use_te=True, num_experts=8, moe_use_legacy_grouped_gemm=False)
        """}
    assert where(gate(tmp_path, wheels, files)) == {("spec.py", 3, c.UNEXPECTED_KEYWORD)}


def test_a_replacement_with_its_own_signature_is_the_projects(tmp_path, wheels):
    files = {"patch.py": """
        from megatron.core import specs
        def mine(use_te=True, num_experts=None, moe_use_legacy_grouped_gemm=False):
            return None
        specs.get_moe_module_spec = mine
        specs.get_moe_module_spec(moe_use_legacy_grouped_gemm=True)
        """}
    assert where(gate(tmp_path, wheels, files)) == set()
