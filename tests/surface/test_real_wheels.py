"""The surface gate against the real release wheels (downloaded into the cache on first use): the upgrade breaks
users reported, found on the release that introduced them and absent on the one before."""
from __future__ import annotations

import textwrap

import pytest

from compat.tooling.gate.surface import check as c
from compat.tooling.gate.surface.cache import model_for, release_models
from compat.tooling.gate.surface.lookup import Surface
from compat.tooling.gate.surface.project import scan_project
from compat.tooling.gate.surface.release_gate import candidate_path, check_model

pytestmark = pytest.mark.network


def run(tmp_path, version: str, source: str, history=()):
    (tmp_path / "proj").mkdir(exist_ok=True)
    (tmp_path / "proj" / "use.py").write_text(textwrap.dedent(source))
    for v in history:
        candidate_path(v)  # into the wheel cache, so that history sees it
    releases = {v: Surface(m) for v, m in release_models(set(history)).items()}
    model = model_for(candidate_path(version))
    return check_model(scan_project(tmp_path / "proj"), model, version, releases=releases)


def only(report):
    assert len(report.findings) == 1, report.findings
    return report.findings[0]


def test_model_type_encoder_and_decoder(tmp_path):
    source = """
        from megatron.core.models.gpt.gpt_model import ModelType
        model_type = ModelType.encoder_and_decoder
        """
    gone = only(run(tmp_path, "0.17.0", source, history=("0.16.1", "0.17.0")))
    assert (gone.kind, gone.line, gone.guarded) == (c.MISSING_MEMBER, 3, False)
    assert gone.name == "megatron.core.models.gpt.gpt_model.ModelType.encoder_and_decoder"
    assert gone.close == ["encoder_or_decoder"] and gone.history["removed_in"] == "0.17.0"
    deprecated = only(run(tmp_path, "0.16.1", source))
    assert deprecated.kind == c.DEPRECATED and "encoder_or_decoder" in deprecated.instead
    assert not run(tmp_path, "0.13.1", source).findings


def test_packed_seq_params_total_tokens(tmp_path):
    source = """
        from megatron.core.packed_seq_params import PackedSeqParams
        PackedSeqParams(qkv_format="thd", total_tokens=7)
        """
    floor = only(run(tmp_path, "0.16.1", source, history=("0.16.1", "0.17.0")))
    assert (floor.kind, floor.line) == (c.UNEXPECTED_KEYWORD, 3)
    assert floor.name == "megatron.core.packed_seq_params.PackedSeqParams(total_tokens=)"
    assert floor.history["added_in"] == "0.17.0"
    assert not run(tmp_path, "0.17.0", source).findings


def test_custom_fsdp_module(tmp_path):
    source = """
        from megatron.core.distributed.custom_fsdp import FullyShardedDataParallel
        """
    gone = only(run(tmp_path, "0.14.0", source, history=("0.13.1", "0.14.0")))
    assert (gone.kind, gone.name) == (c.MISSING_MODULE, "megatron.core.distributed.custom_fsdp")
    assert gone.history == {"works_in": ["0.13.1"], "last_in": "0.13.1", "removed_in": "0.14.0"}
    assert not run(tmp_path, "0.13.1", source).findings


def test_megatron_training_ships_only_from_0_17(tmp_path):
    source = """
        from megatron.training.global_vars import get_args
        from megatron.training.tokenizer import build_tokenizer
        """
    old = run(tmp_path, "0.16.1", source)
    assert {(f.kind, f.name) for f in old.findings} == {(c.NOT_SHIPPED, "megatron.training")}
    new = run(tmp_path, "0.17.0", source, history=("0.16.1", "0.17.0"))
    assert {(f.kind, f.name) for f in new.findings} == {(c.NOT_SHIPPED, "megatron.training.tokenizer")}
