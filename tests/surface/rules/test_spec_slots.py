"""Spec slots assigned by attribute (recall case slime_hf_attention_pg_collection): a project that
patches a layer spec in place (``spec.submodules.self_attention = ModuleSpec(module=C, params={...})``,
``spec.submodules.self_attention.module = C``, also through list elements ``block.layer_specs[i].submodules...``)
has ``C`` built by whichever candidate class builds that slot. A slot name several classes build is a misfit only
where every one of them misfits (the spec's owner is unknown); ``.module = C`` keeps the old spec's params, so only
``forward`` is checked there."""
from __future__ import annotations

import pytest

from compat.tooling.gate.surface.release_gate import surface_gate

from ..builders import PAIR_0_3_0 as OLD
from ..builders import PAIR_0_4_0 as NEW
from ..builders import SPEC_UTILS, make_project, make_wheel

LAYER = """
    from megatron.core.spec_utils import build_module
    class LayerSubmodules:
        def __init__(self, self_attention=None, mlp=None):
            self.self_attention = self_attention
            self.mlp = mlp
    class Layer:
        def __init__(self, config, submodules, layer_number=1):
            self.self_attention = build_module(submodules.self_attention, config=config, {groups}=None)
            self.mlp = build_module(submodules.mlp, config=config)
        def forward(self, x):
            return self.mlp(self.self_attention(x))
    """

PROJECT = """
    from megatron.core.spec_utils import ModuleSpec
    class HfAttention:
        def __init__(self, args, config, model_comm_pgs=None):
            pass
        def forward(self, x):
            return x
    class Mlp:
        def __init__(self, config):
            pass
        def forward(self, x, scale):
            return x
    def patch(block, args):
        for i in range(len(block.layer_specs)):
            block.layer_specs[i].submodules.self_attention = ModuleSpec(module=HfAttention, params={"args": args})
            block.layer_specs[i].submodules.mlp.module = Mlp
    """


@pytest.fixture
def releases(tmp_path, monkeypatch):
    cache = tmp_path / "cache" / "wheels"
    monkeypatch.setenv("MCORE_COMPAT_CACHE", str(cache.parent))

    def make(version: str, groups: str, other: str | None = None) -> str:
        files = {**(OLD if version == "0.3.0" else NEW), "megatron/core/spec_utils.py": SPEC_UTILS,
                 "megatron/core/layer.py": LAYER.format(groups=groups)}
        if other is not None:
            files["megatron/core/other_layer.py"] = LAYER.format(groups=other).replace("Layer", "OtherLayer")
        return str(make_wheel(cache, version, files))
    return make


def spec_findings(tmp_path, wheel: str) -> set:
    report = surface_gate(wheel, make_project(tmp_path / "proj", {"patch.py": PROJECT}))
    return {(f.line, f.name, f.guarded) for f in report.findings if f.use == "spec"}


def test_a_slot_assigned_through_a_list_element_is_built_with_the_candidates_keywords(tmp_path, releases):
    releases("0.3.0", "model_comm_pgs")
    wheel = releases("0.4.0", "pg_collection")
    # the renamed keyword reaches HfAttention.__init__ (params are a literal: args= is added); Mlp.forward is
    # called without scale by the only class that builds an mlp
    assert spec_findings(tmp_path, wheel) == {(4, "patch.HfAttention.__init__(pg_collection=)", False),
                                              (11, "patch.Mlp.forward(scale=)", False)}


def test_the_same_slot_fits_on_the_release_whose_builder_passes_what_the_class_takes(tmp_path, releases):
    wheel = releases("0.3.0", "model_comm_pgs")
    releases("0.4.0", "pg_collection")
    assert spec_findings(tmp_path, wheel) == {(11, "patch.Mlp.forward(scale=)", False)}


def test_a_slot_two_builders_fill_differently_is_a_misfit_only_where_both_misfit(tmp_path, releases):
    releases("0.3.0", "model_comm_pgs")
    wheel = releases("0.4.0", "pg_collection", other="model_comm_pgs")
    # OtherLayer still passes model_comm_pgs=: the spec may be OtherLayer's, so its __init__ is not certain to fail
    assert spec_findings(tmp_path, wheel) == {(11, "patch.Mlp.forward(scale=)", False)}


def test_a_misfit_inherited_from_a_project_base_in_another_file_is_reported_at_the_bases_def(tmp_path, releases):
    # slime's shape: the spec holds a subclass; the __init__ it inherits, the line to change, is in another file
    releases("0.3.0", "model_comm_pgs")
    wheel = releases("0.4.0", "pg_collection")
    report = surface_gate(wheel, make_project(tmp_path / "proj", {"hf_attention.py": """
        from megatron.core.spec_utils import build_module
        class HfAttention:
            def __init__(self, args, config, model_comm_pgs=None):
                pass
        """, "model.py": """
        from megatron.core.spec_utils import ModuleSpec
        from hf_attention import HfAttention
        class Next(HfAttention):
            pass
        def patch(block, args):
            block.layer_specs[0].submodules.self_attention = ModuleSpec(module=Next, params={"args": args})
        """}))
    got = [(f.path, f.line, f.name, f.guarded) for f in report.findings if f.use == "spec"]
    assert got == [("hf_attention.py", 4, "model.Next.__init__(pg_collection=)", False)]
    assert "from the spec at model.py:7;" in report.findings[0].instead


def test_a_class_in_a_spec_named_through_a_package_reexport_is_checked(tmp_path, releases):
    releases("0.3.0", "model_comm_pgs")
    wheel = releases("0.4.0", "pg_collection")
    report = surface_gate(wheel, make_project(tmp_path / "proj", {
        "pkg/__init__.py": "from .hf_attention import HfAttention\n",
        "pkg/hf_attention.py": """
            from megatron.core.spec_utils import build_module
            class HfAttention:
                def __init__(self, args, config, model_comm_pgs=None):
                    pass
            """, "model.py": """
            from megatron.core.spec_utils import ModuleSpec
            from pkg import HfAttention
            def patch(block, args):
                block.layer_specs[0].submodules.self_attention = ModuleSpec(module=HfAttention, params={"args": args})
            """}))
    got = [(f.path, f.line, f.name) for f in report.findings if f.use == "spec"]
    assert got == [("pkg/hf_attention.py", 4, "pkg.HfAttention.__init__(pg_collection=)")]
