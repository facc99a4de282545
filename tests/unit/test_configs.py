"""Every config class from the registry alone (no megatron): counts, renames, implied defaults, types, checks,
cross rules, the typed errors of the API, and what the upstream heads have."""
import dataclasses
import json

import pytest

import compat
from compat import (
    CompatError,
    ConfigAbsentError,
    ConstraintError,
    FieldTypeError,
    InvalidValueError,
    TorchNotInstalledError,
    UnknownFieldError,
    UnsupportedFieldError,
)
from compat.registry import Field, Schema, load_json, registry
from compat.resolution import resolve

TF = {"num_layers": 2, "hidden_size": 64, "num_attention_heads": 4}

# Field counts per release from shared/research/config_schema/SUMMARY.md (extracted independently of this code):
# TransformerConfig incl. ModelParallelConfig, MLATransformerConfig, OptimizerConfig, Adam/SGD subclasses.
SUMMARY = {
    "0.7.0": (114, None, 25, None), "0.8.0": (116, None, 25, None), "0.9.0": (123, None, 27, None),
    "0.10.0": (135, 147, 25, None), "0.11.0": (152, 166, 30, None), "0.12.0": (174, 188, 36, None),
    "0.12.1": (174, 188, 36, None), "0.12.2": (174, 188, 36, None), "0.12.3": (174, 188, 36, None),
    "0.13.0": (187, 201, 39, None), "0.13.1": (187, 201, 39, None), "0.14.0": (193, 208, 41, None),
    "0.15.0": (204, 219, 41, None), "0.15.1": (204, 219, 41, None), "0.15.2": (204, 219, 41, None),
    "0.15.3": (204, 219, 41, None), "0.16.0": (242, 257, 50, 50), "0.16.1": (242, 257, 50, 50),
    "0.17.0": (256, 272, 55, 55), "0.17.1": (259, 275, 55, 55), "0.18.0": (278, 294, 63, None),
    "0.18.1": (278, 294, 63, None), "0.18.2": (278, 294, 63, None), "0.19.0": (306, 322, 63, None),
    "0.19.1": (306, 322, 63, None), "0.19.2": (306, 322, 63, None),
}
# TransformerConfig's own __post_init__ checks per release (SUMMARY section 4), plus ModelParallelConfig's.
TF_CHECKS = {"0.7.0": 24 + 5, "0.9.0": 26 + 6, "0.12.3": 64 + 7, "0.16.1": 143 + 6, "0.19.2": 193 + 6}


def test_every_class_of_every_release_with_the_research_field_counts():
    reg = registry()
    assert reg.versions() == list(SUMMARY)
    for version, (tf, mla, opt, sub) in SUMMARY.items():
        assert len(reg.schema(version, config="transformer").fields) == tf, version
        assert len(reg.schema(version, config="optimizer").fields) == opt, version
        assert reg.has(version, config="mla") is (mla is not None)
        if mla:
            assert len(reg.schema(version, config="mla").fields) == mla, version
        for key in ("adam_optimizer", "sgd_optimizer"):
            assert reg.has(version, config=key) is (sub is not None), (version, key)
            if sub:
                assert len(reg.schema(version, config=key).fields) == sub


def test_inheritance_order_redeclared_fields_and_owners():
    reg = registry()
    tf, mla = reg.schema("0.19.2", config="transformer"), reg.schema("0.19.2", config="mla")
    assert tf.bases == ("ModelParallelConfig",) and mla.bases == ("TransformerConfig", "ModelParallelConfig")
    assert tf.names[0] == "tensor_model_parallel_size" and tf.get("tensor_model_parallel_size").owner == \
        "ModelParallelConfig"
    assert mla.names[:len(tf.names)] == tf.names  # base order first, re-declarations in place
    assert (tf.get("normalization").default, mla.get("normalization").default) == ("LayerNorm", "RMSNorm")
    assert mla.get("normalization").owner == "MLATransformerConfig"
    sgd = reg.schema("0.16.1", config="sgd_optimizer")
    assert sgd.get("optimizer").default == "sgd" and sgd.names == reg.schema("0.16.1", config="optimizer").names


@pytest.mark.parametrize("version", sorted(TF_CHECKS))
def test_transformer_post_init_checks_per_release(version):
    schema = registry().schema(version, config="transformer")
    assert len(schema.checks) == TF_CHECKS[version]
    assert {c.owner for c in schema.checks} == {"TransformerConfig", "ModelParallelConfig"}
    assert schema.checks[0].owner == "ModelParallelConfig"  # super().__post_init__() runs first
    assert sum(c.skip is None for c in schema.checks) >= 20


def test_the_registry_is_small_and_stores_each_record_once():
    data = registry().data
    keys = [json.dumps(f, sort_keys=True) for f in data["fields"]]
    assert len(keys) == len(set(keys))
    snaps = [json.dumps(s, sort_keys=True) for s in data["snapshots"].values()]
    assert len(snaps) == len(set(snaps))
    writes = [json.dumps(w, sort_keys=True) for w in data["writes"]]
    assert len(writes) == len(set(writes))
    assert len(json.dumps(data)) < 700_000  # 26 releases; __post_init__'s write records are about a third


# ------------------------------------------------------------------------------------ renames
RENAME_CANDIDATES = [  # every candidate of changes.json (research), decided in renames.json
    ("transformer", "first_pipeline_num_layers", "num_layers_in_first_pipeline_stage"),
    ("transformer", "last_pipeline_num_layers", "num_layers_in_last_pipeline_stage"),
    ("transformer", "last_pipeline_num_layers", "num_layers_in_first_pipeline_stage"),
    ("transformer", "first_pipeline_num_layers", "num_layers_in_last_pipeline_stage"),
    ("optimizer", "muon_use_nesterov", "muon_nesterov"),
    ("optimizer", "muon_use_nesterov", "adaptive_muon_moment2_method"),
    ("ddp", "keep_fp8_transpose_cache_when_using_custom_fsdp", "keep_fp8_transpose_cache"),
    ("mla", "max_position_embeddings", "original_max_position_embeddings"),
]


def test_every_rename_candidate_is_decided_with_evidence_and_a_reason():
    data = load_json("renames.json")
    decided = {(r["config"], r["old"], r["new"]) for r in data["renames"] + data["rejected"]}
    assert set(RENAME_CANDIDATES) <= decided
    for r in data["renames"] + data["rejected"]:
        assert r["evidence"] and r["why"], r


@pytest.mark.parametrize("config, overrides, version, expected", [
    ("optimizer", {"muon_use_nesterov": True}, "0.18.0", {"muon_nesterov": True}),
    ("optimizer", {"muon_nesterov": True}, "0.17.1", {"muon_use_nesterov": True}),
    ("adam_optimizer", {"muon_nesterov": True}, "0.16.1", {"muon_use_nesterov": True}),
    ("transformer", {**TF, "first_pipeline_num_layers": 1}, "0.11.0",
     {**TF, "num_layers_in_first_pipeline_stage": 1}),
    ("transformer", {**TF, "num_layers_in_last_pipeline_stage": 1}, "0.10.0", {**TF, "last_pipeline_num_layers": 1}),
    ("mla", {**TF, "num_layers_in_first_pipeline_stage": 1}, "0.10.0", {**TF, "first_pipeline_num_layers": 1}),
    ("mla", {**TF, "max_position_embeddings": 8192}, "0.19.2", {**TF, "original_max_position_embeddings": 8192}),
    ("mla", {**TF, "original_max_position_embeddings": 8192}, "0.13.1", {**TF, "max_position_embeddings": 8192}),
])
def test_renames_both_ways_for_every_class(config, overrides, version, expected):
    assert compat.config_kwargs(config, overrides, version, dtype_format="str") == expected


def test_a_rejected_candidate_is_not_an_alias():
    with pytest.raises(UnsupportedFieldError, match="0.16.0-0.17.1"):
        compat.optimizer_kwargs({"muon_use_nesterov": True}, "0.15.3")
    res = resolve({"adaptive_muon_moment2_method": "adamuon"}, config="optimizer", version="0.17.1")
    assert res.kwargs == {} and res.dropped[0].name == "adaptive_muon_moment2_method"  # its own field, implied


def test_a_live_subclass_with_both_names_keeps_the_old_one():
    """A Bridge-style subclass declaring its own max_position_embeddings next to original_...: the live
    dataclass decides, the key is not redirected."""
    base = registry().schema("0.19.2", config="mla")
    extra = Field("max_position_embeddings", "int", 4096, "4096")
    live = Schema("0.19.2", "live", base.fields + (extra,), config="mla", class_name="BridgeMLA")
    res = resolve({**TF, "max_position_embeddings": 163840}, config="mla", schema=live)
    assert res.kwargs["max_position_embeddings"] == 163840 and "original_max_position_embeddings" not in res.kwargs


# ------------------------------------------------------------------------------------ absent fields
def test_removed_field_uses_its_last_default_and_new_field_its_first():
    # moe_use_legacy_grouped_gemm: 0.11.0-0.16.1, removed 0.17.0
    res = resolve({**TF, "moe_use_legacy_grouped_gemm": False}, config="transformer", version="0.19.2")
    assert [d.name for d in res.dropped] == ["moe_use_legacy_grouped_gemm"]
    with pytest.raises(UnsupportedFieldError, match="0.11.0-0.16.1"):
        resolve({**TF, "moe_use_legacy_grouped_gemm": True}, config="transformer", version="0.19.2")
    # mtp_loss_scaling_factor: None (0.12-0.15) then 0.1 (0.16+): 0.11 lacks it and behaves as its first default
    assert resolve({**TF, "mtp_loss_scaling_factor": None}, config="transformer", version="0.11.0").kwargs == TF
    with pytest.raises(UnsupportedFieldError):
        resolve({**TF, "mtp_loss_scaling_factor": 0.1}, config="transformer", version="0.11.0")


def test_gap_in_a_fields_history_is_described():
    # OptimizerConfig.overlap_param_gather: 0.7.0-0.9.0, then again from 0.14.0
    with pytest.raises(UnsupportedFieldError, match=r"0.7.0-0.9.0, 0.14.0-0.19.2"):
        compat.optimizer_kwargs({"overlap_param_gather": True}, "0.12.3")


def test_an_expression_default_is_never_assumed_equal():
    # attention_backend = AttnBackend.auto (0.11+) is kept as text: 0.10 cannot be shown to behave as a value
    with pytest.raises(UnsupportedFieldError, match="attention_backend"):
        resolve({**TF, "attention_backend": "auto"}, config="transformer", version="0.10.0")
    # float('inf') is read as infinity (never written to JSON): equal to it means the same behaviour
    res = resolve({"grad_norm_skip_threshold": float("inf")}, config="optimizer", version="0.17.1")
    assert res.kwargs == {} and res.dropped[0].name == "grad_norm_skip_threshold"


# ------------------------------------------------------------------------------------ types
def test_literal_choices_are_those_of_the_target_release():
    with pytest.raises(InvalidValueError, match=r"'sqrtsoftplus' is accepted by 0.11.0-0.15.3, 0.18.0-0.19.2"):
        resolve({**TF, "moe_router_score_function": "sqrtsoftplus"}, config="transformer", version="0.17.1")
    assert resolve({**TF, "moe_router_score_function": "sqrtsoftplus"}, config="transformer",
                   version="0.19.2").kwargs["moe_router_score_function"] == "sqrtsoftplus"
    # 0.15.3 annotates it `str`: any string; a value the newest Literal dropped stays accepted where it existed
    assert resolve({**TF, "moe_token_dispatcher_type": "alltoall_seq"}, config="transformer",
                   version="0.12.3").kwargs["moe_token_dispatcher_type"] == "alltoall_seq"


@pytest.mark.parametrize("config, overrides, error, phrase", [
    ("transformer", {**TF, "num_layers": "2"}, FieldTypeError, "expected int, got str"),
    ("transformer", {**TF, "normalization": "layernorm"}, InvalidValueError, "'LayerNorm', 'RMSNorm'"),
    ("transformer", {**TF, "recompute_modules": "core_attn"}, FieldTypeError, "list[str]"),
    ("transformer", {**TF, "params_dtype": "fp8"}, FieldTypeError, "a torch.dtype or one of"),
    ("optimizer", {"lr": "1e-4"}, FieldTypeError, "'lr'"),
    ("optimizer", {"adam_eps": True}, FieldTypeError, "expected float, got bool"),
    ("optimizer", {"muon_nesterov": 1}, FieldTypeError, "expected bool, got int"),
    ("mla", {**TF, "rope_type": 3}, FieldTypeError, "'rope_type'"),
])
def test_type_checks_of_every_class(config, overrides, error, phrase):
    with pytest.raises(error) as err:
        resolve(overrides, config=config, version="0.19.2")
    assert type(err.value) is error and phrase in str(err.value)


def test_union_and_optional_values():
    res = resolve({**TF, "moe_layer_freq": [1, 0], "moe_aux_loss_coeff": 0, "num_query_groups": None},
                  config="transformer", version="0.19.2")
    assert res.kwargs["moe_layer_freq"] == [1, 0] and res.kwargs["moe_aux_loss_coeff"] == 0


# ------------------------------------------------------------------------------------ __post_init__ pre-checks
def test_extracted_checks_are_pre_checked_with_file_and_line():
    with pytest.raises(ConstraintError, match=r"transformer_config.py:\d+") as err:
        resolve({**TF, "fp16": True, "bf16": True}, config="transformer", version="0.19.2")
    assert err.value.values == {"bf16": True, "fp16": True}
    assert "Only one of self.fp16: True and self.bf16 True" in str(err.value)  # the f-string, filled in
    with pytest.raises(ConstraintError, match="model_parallel_config.py"):
        resolve({**TF, "sequence_parallel": True}, config="transformer", version="0.7.0")
    with pytest.raises(ConstraintError, match="optimizer_config.py"):
        compat.optimizer_kwargs({"main_grads_dtype": "bf16"}, "0.19.2")
    assert compat.optimizer_kwargs({"main_grads_dtype": "bf16"}, "0.10.0", lenient=True) == {}  # no such field


def test_a_check_on_a_field_post_init_rewrites_reads_the_rewritten_value():
    schema = registry().schema("0.19.2", config="transformer")
    groups = [c for c in schema.checks if "num_query_groups" in c.reads and "tensor_model_parallel_size" in c.reads]
    writes = [w for w in schema.effects if w.targets == ("num_query_groups",)]
    assert groups and writes and all(c.skip is None and c.at > schema.effects.index(writes[0]) for c in groups)
    # megatron accepts num_query_groups=None with tp=2 (it becomes 4): a naive pre-check of `None % 2` would not
    assert resolve({**TF, "num_query_groups": None, "tensor_model_parallel_size": 2}, config="transformer",
                   version="0.19.2").kwargs["tensor_model_parallel_size"] == 2


def test_asserts_are_not_pre_checked_under_python_O():
    import subprocess
    import sys

    code = ("import compat; print(compat.optimizer_kwargs({'main_grads_dtype': 'bf16'}, '0.19.2', "
            "dtype_format='str'))")
    proc = subprocess.run([sys.executable, "-O", "-c", code], capture_output=True, text=True)
    assert proc.returncode == 0 and "bfloat16" in proc.stdout, proc.stderr


def test_resolution_reports_how_many_checks_ran():
    res = resolve(TF, config="transformer", version="0.19.2")
    assert res.prechecks["checks"] == 199 and 30 < res.prechecks["evaluated"] < 199


# ------------------------------------------------------------------------------------ cross rules
PAO = {"optimizer": "adam", "use_precision_aware_optimizer": True, "use_distributed_optimizer": True,
       "main_grads_dtype": "bf16"}


def test_precision_aware_optimizer_makes_ddp_distributed():
    res = resolve({}, PAO, "0.19.2")
    assert res.kwargs["use_distributed_optimizer"] is True
    assert res.fields["use_distributed_optimizer"].rule.startswith("precision-aware-optimizer-needs-distributed-ddp")
    with pytest.raises(ConstraintError, match="precision-aware-optimizer-needs-distributed-ddp"):
        resolve({"use_distributed_optimizer": False}, PAO, "0.19.2")


def test_fsdp_decoupled_grad_follows_the_precision_aware_optimizer():
    res = resolve({"use_megatron_fsdp": True}, PAO, "0.18.0")
    assert res.kwargs["megatron_fsdp_use_decoupled_grad"] is True
    with pytest.raises(ConstraintError, match="fsdp-decoupled-grad"):
        resolve({"use_megatron_fsdp": True, "megatron_fsdp_use_decoupled_grad": False}, PAO, "0.19.2")
    with pytest.raises(ConstraintError, match="fsdp-decoupled-grad"):
        resolve({"use_megatron_fsdp": True, "megatron_fsdp_use_decoupled_grad": True}, {"optimizer": "adam"},
                "0.19.2")
    assert "megatron_fsdp_use_decoupled_grad" not in resolve({"use_megatron_fsdp": True}, PAO, "0.17.1").kwargs


def test_overlap_param_gather_agrees_when_resolved_together():
    together = compat.resolve_configs(ddp={"overlap_param_gather": True, "use_distributed_optimizer": True},
                                      optimizer={"use_distributed_optimizer": True}, version="0.19.2")
    assert together.optimizer.kwargs["overlap_param_gather"] is True
    assert together.optimizer.fields["overlap_param_gather"].source == "cross-config rule"
    together = compat.resolve_configs(ddp={}, optimizer={"overlap_param_gather": True}, version="0.19.2")
    assert together.ddp.kwargs["overlap_param_gather"] is True
    with pytest.raises(ConstraintError, match="overlap-param-gather-agrees"):
        compat.resolve_configs(ddp={"overlap_param_gather": True}, optimizer={"overlap_param_gather": False},
                               version="0.19.2")
    # before 0.14 the optimizer had no such field: nothing to agree on
    assert compat.resolve_configs(ddp={"overlap_param_gather": True}, optimizer={}, version="0.13.1").optimizer


def test_a_built_optimizer_at_its_default_only_gets_a_note():
    @dataclasses.dataclass
    class Built:  # an object, as get_megatron_optimizer receives it: every field carries a value
        overlap_param_gather: bool = False

    res = resolve({"overlap_param_gather": True}, Built(), "0.19.2")
    assert res.kwargs["overlap_param_gather"] is True
    assert any("optimizer.overlap_param_gather should be True" in w for w in res.warnings)


def test_fp32_grad_reduce_needs_fp32_main_grads_from_0_17():
    opt = {**PAO, "bf16": True}
    with pytest.raises(ConstraintError, match="fp32-grad-reduce-needs-fp32-main-grads"):
        resolve({"grad_reduce_in_fp32": True}, opt, "0.17.0")
    assert resolve({"grad_reduce_in_fp32": True}, opt, "0.16.1").kwargs["grad_reduce_in_fp32"] is True
    assert resolve({}, opt, "0.19.2").kwargs["grad_reduce_in_fp32"] is False  # the resolver's own choice


def test_muon_layer_wise_layout_follows_an_optimizer_that_carries_it():
    muon = {"optimizer": "muon", "use_layer_wise_distributed_optimizer": True}
    assert compat.resolve_ddp_overrides({}, muon) == {"grad_reduce_in_fp32": True, "use_layer_wise_param_layout": True}
    carried = {**muon, "use_layer_wise_param_layout": False}
    assert compat.resolve_ddp_overrides({}, carried)["use_layer_wise_param_layout"] is False  # follows, no True
    with pytest.raises(ConstraintError, match="layer-wise-param-layout-agrees"):
        compat.resolve_ddp_overrides({"use_layer_wise_param_layout": True}, carried)
    res = resolve({}, carried, "0.19.2")  # a release lacks the field: False is its behaviour
    assert res.fields["use_layer_wise_param_layout"].source == "dropped: equals implied default"


# ------------------------------------------------------------------------------------ API types
@pytest.mark.parametrize("optimizer_config", ["muon", b"adam", 3, ["optimizer", "muon"]])
def test_optimizer_config_must_be_a_config(optimizer_config):
    with pytest.raises(FieldTypeError, match="optimizer_config"):
        compat.resolve_ddp_overrides({}, optimizer_config)
    with pytest.raises(FieldTypeError, match="optimizer_config"):
        compat.ddp_kwargs({}, optimizer_config, "0.19.2")


def test_dtype_without_torch_is_a_typed_error(monkeypatch):
    import builtins

    real = builtins.__import__

    def no_torch(name, *args, **kwargs):
        if name == "torch":
            raise ModuleNotFoundError("No module named 'torch'")
        return real(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_torch)
    with pytest.raises(TorchNotInstalledError, match="dtype_format='str'"):
        compat.ddp_kwargs({"megatron_fsdp_main_params_dtype": "bf16"}, None, "0.19.2")


def test_bad_dtype_format_and_config_names():
    with pytest.raises(InvalidValueError, match="dtype_format"):
        compat.ddp_kwargs({}, None, "0.19.2", dtype_format="bogus")
    with pytest.raises(InvalidValueError, match="config"):
        resolve({}, config="pipeline")
    with pytest.raises(ConfigAbsentError, match="0.16.0-0.17.1"):
        compat.optimizer_kwargs({}, "0.19.2", config="adam_optimizer")
    with pytest.raises(InvalidValueError, match="only the ddp config takes an optimizer config"):
        resolve({}, {"optimizer": "adam"}, "0.19.2", config="transformer")
    with pytest.raises(UnknownFieldError, match="fields --config transformer"):
        resolve({"zzzz_qqqq": 1}, config="transformer", version="0.19.2")


# ------------------------------------------------------------------------------------ upstream heads
def test_fields_of_the_upstream_heads_are_known_as_unreleased():
    with pytest.raises(UnsupportedFieldError, match=r"unreleased Megatron-LM main \(reports 0\.20\.0") as err:
        compat.ddp_kwargs({"megatron_fsdp_version": 2}, None, "0.19.2")
    assert "did you mean" not in str(err.value)
    assert resolve({"megatron_fsdp_version": 1}, None, "0.19.2").kwargs == {}  # its default: dropped, recorded
    with pytest.raises(UnsupportedFieldError, match="unreleased Megatron-LM dev"):
        compat.optimizer_kwargs({"offload_optimizer_states": True}, "0.19.2")


def test_a_build_whose_label_claims_a_release_it_does_not_match():
    """A commit that reports 0.18.0 but lacks num_buckets (a pre-release)."""
    release = registry().schema("0.18.0", config="ddp")
    live = Schema("0.18.0rc1", "live", tuple(f for f in release.fields if f.name != "num_buckets"),
                  release.post_init_reads, release.post_init_writes, config="ddp",
                  class_name="DistributedDataParallelConfig")
    with pytest.raises(UnsupportedFieldError, match="this build lacks num_buckets although its version label says "
                                                    "0.18.0rc1"):
        resolve({"num_buckets": 4}, None, schema=live)


# ------------------------------------------------------------------------------------ audit (registry stand-in)
@dataclasses.dataclass
class SmallOptimizerConfig:
    """A stand-in with one of OptimizerConfig's checks, for the mechanism (real classes: tests/contract)."""

    optimizer: str = "adam"
    lr: float | None = None
    use_precision_aware_optimizer: bool = False
    main_grads_dtype: str = "float32"

    def __post_init__(self):
        if not self.use_precision_aware_optimizer:
            assert self.main_grads_dtype == "float32", "main_grads_dtype can only be fp32"


def test_audit_compares_values_and_reruns_checks_on_later_changes():
    res = resolve({"lr": 1e-4}, config="optimizer", version="0.19.2")
    opt = SmallOptimizerConfig(**res.kwargs)
    assert compat.audit(opt, res) == []
    opt.lr, opt.main_grads_dtype = 3e-4, "bfloat16"
    diffs = compat.audit(opt, res)
    assert {(d.field, d.kind) for d in diffs} == {("lr", "value"), ("main_grads_dtype", "value"),
                                                  ("main_grads_dtype", "check")}
    assert next(d for d in diffs if d.field == "lr").expected == 1e-4
    with pytest.raises(compat.AuditError) as err:
        compat.audit(opt, res, strict=True)
    assert isinstance(err.value, CompatError) and len(err.value.differences) == 3
    with pytest.raises(CompatError, match="a config object"):
        compat.audit({"lr": 1}, res)
