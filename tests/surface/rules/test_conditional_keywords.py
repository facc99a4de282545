"""A keyword the candidate passes to a project function only under a condition: reported with the
condition named, guarded, not as an always-breaking call; keywords it always passes stay unguarded. Minimal
projects of our own against a tiny synthetic candidate (the shapes of 0.19.2's ``TransformerLayer`` and
``get_model``, written here)."""
from __future__ import annotations

import pytest

from compat.tooling import refresh
from compat.tooling.gate.surface import check as c
from compat.tooling.gate.surface.conditions import always, describe, simplify
from compat.tooling.gate.surface.release_gate import surface_gate

from ..builders import SPEC_UTILS, make_project, make_wheel

LAYER = """
    from megatron.core.spec_utils import build_module
    class LayerSubmodules:
        def __init__(self, self_attention=None):
            self.self_attention = self_attention
    class Layer:
        def __init__(self, config, submodules, layer_number=1, pp_layer_offset=None, pg_collection=None):
            extra = {}
            if config.context_parallel_size > 1:
                if isinstance(config.cp_comm_type, list):
                    extra["cp_comm_type"] = config.cp_comm_type[0]
                else:
                    extra["cp_comm_type"] = config.cp_comm_type
            extra["pg_collection"] = pg_collection
            if pp_layer_offset is not None:
                extra["pp_layer_offset"] = pp_layer_offset
            if config.fused:
                extra["fused"] = True
            else:
                extra["fused"] = False
            self.self_attention = build_module(submodules.self_attention, config=config, **extra)
        def forward(self, x, mask):
            if mask is None:
                return self.self_attention(x, attention_mask=mask, window=None)
            return self.self_attention(x, attention_mask=mask)
    """
TRAINING = """
    def get_model(model_provider_func, model_type=None):
        if model_type is not None and model_type.virtual:
            return [model_provider_func(pre_process=True, post_process=True, vp_stage=i) for i in range(2)]
        else:
            return [model_provider_func(pre_process=True, post_process=True, config=None)]
    """
PROJECT = {"attn.py": """
    from megatron.core.layer import Layer
    class MyAttention:
        def __init__(self, config, submodules=None, layer_number=1):
            pass
        def forward(self, hidden_states, attention_mask):
            return hidden_states
    """, "spec.py": """
    from megatron.core.spec_utils import ModuleSpec
    from megatron.core.layer import Layer, LayerSubmodules
    from attn import MyAttention
    spec = ModuleSpec(module=Layer, submodules=LayerSubmodules(self_attention=ModuleSpec(module=MyAttention)))
    """, "train.py": """
    from megatron.training.setup import get_model
    def provider(pre_process=True, post_process=True):
        return None
    def needs_stage(vp_stage, pre_process=True, post_process=True, config=None):
        return None
    def no_pre_process(post_process=True, config=None, vp_stage=None):
        return None
    get_model(provider)
    get_model(needs_stage)
    get_model(no_pre_process)
    """}


@pytest.fixture
def candidate(tmp_path, monkeypatch):
    cache = tmp_path / "cache" / "wheels"
    monkeypatch.setenv("MCORE_COMPAT_CACHE", str(cache.parent))
    files = {"megatron/__init__.py": "", "megatron/core/__init__.py": "", "megatron/core/spec_utils.py": SPEC_UTILS,
             "megatron/core/layer.py": LAYER, "megatron/training/__init__.py": "",
             "megatron/training/setup.py": TRAINING}
    path = make_wheel(cache, "0.4.0", files)
    monkeypatch.setattr(refresh, "list_releases", lambda *a, **k: {"0.4.0": False})
    return path


def findings(tmp_path, candidate) -> dict:  # a spec finding sits at the def it misfits (attn.py), as an override
    report = surface_gate(str(candidate), make_project(tmp_path / "proj", PROJECT))
    return {(f.path, f.name.split("(", 1)[1]): f for f in report.findings if f.kind == c.OVERRIDE}


def test_a_dict_key_set_under_an_if_is_a_conditional_keyword_and_names_its_condition(tmp_path, candidate):
    got = findings(tmp_path, candidate)
    always_passed = got[("attn.py", "pg_collection=)")]
    assert not always_passed.guarded and always_passed.breaks
    offset = got[("attn.py", "pp_layer_offset=)")]
    assert offset.guarded and not offset.breaks
    assert offset.guard == "conditional: the candidate calls it so only when pp_layer_offset is not None"
    # both branches of the inner if set it: only the outer test is the condition
    cp = got[("attn.py", "cp_comm_type=)")]
    assert cp.guarded and cp.guard.endswith("only when config.context_parallel_size > 1")
    # set in the if branch and in the else branch: always passed
    assert got[("attn.py", "fused=)")].breaks


def test_a_keyword_one_call_passes_and_another_call_of_the_same_function_does_not(tmp_path, candidate):
    got = findings(tmp_path, candidate)
    # forward calls self.self_attention(..., window=None) only in the mask-is-None branch
    window = got[("attn.py", "window=)")]
    assert window.guarded and window.guard.endswith("only when mask is None")
    # get_model passes vp_stage= in one branch, config= in the other; pre_process= in both
    stage = got[("train.py", "vp_stage=)->provider")]
    assert stage.guarded and "model_type is not None and model_type.virtual" in stage.guard
    config = got[("train.py", "config=)->provider")]
    assert config.guarded and "not (model_type is not None and model_type.virtual)" in config.guard
    # a required parameter one branch leaves out: conditional on that branch
    missing = got[("train.py", "vp_stage=)->needs_stage")]
    assert missing.guarded and "requires vp_stage" in missing.instead
    assert "not (model_type is not None" in missing.guard
    # passed by the call in each branch: always, so unguarded
    assert got[("train.py", "pre_process=)->no_pre_process")].breaks


def test_the_markdown_report_lists_a_conditional_keyword_with_its_condition(tmp_path, candidate):
    from compat.tooling.gate.surface.report import markdown

    report = surface_gate(str(candidate), make_project(tmp_path / "proj", PROJECT))
    text = markdown(report)
    guarded = text.split("## Guarded", 1)[1].split("## Deprecated", 1)[0]
    assert "conditional: the candidate calls it so only when pp\\_layer\\_offset is not None" in guarded
    breaks = text.split("## Breaks (unguarded)", 1)[1].split("## Guarded", 1)[0]
    assert "pg_collection" in breaks and "pp_layer_offset" not in breaks
    assert "not ()" not in text


def test_alternatives_merge_only_when_both_branches_of_one_test_hold():
    assert always([("a",), ("!a",)]) and always([("a", "b"), ("a", "!b"), ("!a",)])
    assert simplify([("a", "b"), ("!a", "c")]) == [("!a", "c"), ("a", "b")]
    assert not always([("a",), ("!b",)])
    assert describe([("a", "!b")]) == "a and not (b)"
