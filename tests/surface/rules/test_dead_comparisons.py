"""A branch that compares with a megatron enum member the candidate no longer has: its test
raises there (the read is the finding) or, when the name is left as a method or property of the enum, is never
true; the branch's body does not run, so what it uses is guarded, not reported as a break. Minimal projects of our
own against tiny synthetic candidates."""
from __future__ import annotations

import pytest

from compat.tooling import refresh
from compat.tooling.gate.surface import check as c
from compat.tooling.gate.surface.release_gate import surface_gate

from ..builders import make_project, make_wheel

STATE = "def get_pipeline_model_parallel_world_size():\n    return 1\n"
ENUMS = {
    "0.3.0": """
        import enum
        class ModelType(enum.Enum):
            encoder_or_decoder = 1
            @property
            def encoder_and_decoder(self):
                raise ValueError("deprecated")
        """,
    "0.4.0": """
        import enum
        class ModelType(enum.Enum):
            encoder_or_decoder = 1
        """,
}
PROJECT = {"layers.py": """
    from megatron.core import parallel_state as mpu
    from megatron.core.enums import ModelType
    def num_layers(model_type):
        is_encoder_and_decoder = (model_type == ModelType.encoder_and_decoder)
        if is_encoder_and_decoder:
            return mpu.is_pipeline_stage_before_split()
        if model_type == ModelType.encoder_or_decoder:
            return mpu.gone_everywhere()
        if model_type != ModelType.encoder_and_decoder:
            return 0
        else:
            return mpu.is_pipeline_stage_after_split()
    """}


@pytest.fixture
def wheels(tmp_path, monkeypatch):
    cache = tmp_path / "cache" / "wheels"
    monkeypatch.setenv("MCORE_COMPAT_CACHE", str(cache.parent))
    paths = {v: make_wheel(cache, v, {"megatron/__init__.py": "", "megatron/core/__init__.py": "",
                                      "megatron/core/parallel_state.py": STATE, "megatron/core/enums.py": text})
             for v, text in ENUMS.items()}
    monkeypatch.setattr(refresh, "list_releases", lambda *a, **k: {v: False for v in paths})
    return paths


def findings(tmp_path, wheels, version) -> dict:
    report = surface_gate(str(wheels[version]), make_project(tmp_path / "proj", PROJECT))
    return {f.line: f for f in report.findings if f.kind in c.BREAKING}


@pytest.mark.parametrize("version", ["0.3.0", "0.4.0"])
def test_a_branch_on_a_member_the_enum_lacks_is_dead_and_the_comparison_is_the_finding(tmp_path, wheels, version):
    got = findings(tmp_path, wheels, version)
    assert got[7].guarded and "never true here" in got[7].guard  # through the name assigned once
    assert got[13].guarded and "never true here" in got[13].guard  # the else of !=
    assert got[9].breaks  # a member the enum has: the branch is live
    if version == "0.4.0":
        assert got[5].breaks and got[5].kind == c.MISSING_MEMBER  # the comparison itself raises
    else:
        assert 5 not in got  # a property of the enum: reading it works, it just never equals a member
    assert set(got) == ({5, 7, 9, 10, 13} if version == "0.4.0" else {7, 9, 13})


def test_a_comparison_with_a_package_the_wheel_does_not_ship_leaves_the_branch_live(tmp_path, wheels):
    report = surface_gate(str(wheels["0.4.0"]), make_project(tmp_path / "proj", {"attn.py": """
        from megatron.core import parallel_state as mpu
        from megatron.model.enums import AttnType
        def build(attention_type):
            if attention_type == AttnType.self_attn:
                return mpu.gone_everywhere()
        """}))
    got = {f.line: f for f in report.findings if f.kind in c.BREAKING}
    assert got[6].breaks  # megatron.model (a Megatron-LM checkout's) is unknown here: the branch may run
