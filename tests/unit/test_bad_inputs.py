"""Bad-input catalogue: every entry gets the exact error class and the key phrase of its message."""
import pytest

import compat
from compat import (
    CompatError,
    ConflictingAliasError,
    ConstraintError,
    FieldTypeError,
    InvalidValueError,
    MegatronNotInstalledError,
    UnknownFieldError,
    UnsupportedFieldError,
    UnsupportedVersionError,
    VersionError,
)

ADAM = {"optimizer": "adam"}
MUON_LW = {"optimizer": "muon", "use_layer_wise_distributed_optimizer": True}

# id: (overrides, optimizer_config, version, error class, key phrase)
CATALOGUE = {
    "typo-bucket-size": ({"bucket_sise": 1}, None, "0.19.2", UnknownFieldError, "did you mean 'bucket_size'"),
    "typo-fp16": ({"grad_reduce_in_fp16": True}, None, "0.19.2", UnknownFieldError,
                  "did you mean 'grad_reduce_in_fp32'"),
    "typo-old-name": ({"use_custom_fdsp": True}, None, "0.13.1", UnknownFieldError, "did you mean 'use_custom_fsdp'"),
    "unknown-no-match": ({"nonsense": 1}, None, "0.19.2", UnknownFieldError, "lists the valid names"),
    "non-str-key": ({1: True}, None, "0.19.2", FieldTypeError, "expected a str field name, got int 1"),
    "overrides-not-mapping": ([("bucket_size", 1)], None, "0.19.2", FieldTypeError, "a mapping"),
    "str-for-bool": ({"grad_reduce_in_fp32": "false"}, None, "0.19.2", FieldTypeError, "expected bool, got str"),
    "int-for-bool": ({"overlap_grad_reduce": 1}, None, "0.19.2", FieldTypeError, "expected bool, got int"),
    # None stays refused where the release reads the field other than by truthiness / `is None`
    # (type_acceptances.json has no "none" row for use_distributed_optimizer)
    "none-for-bool-read-otherwise": ({"use_distributed_optimizer": None}, None, "0.19.2", FieldTypeError,
                                     "None is not allowed), got NoneType None (no release accepts it)"),
    "none-where-older-releases-read-it-as-meant": ({"reuse_grad_buf_for_mxfp8_param_ag": None}, None, "0.19.2",
                                                   FieldTypeError, "(megatron-core 0.13.0-0.18.2 accept it)"),
    "str-for-int": ({"bucket_size": "1"}, None, "0.19.2", FieldTypeError,
                    "expected int, got str '1' (no release accepts it)"),
    "float-for-int": ({"num_distributed_optimizer_instances": 2.0}, None, "0.19.2", FieldTypeError,
                      "expected int, got float"),
    "negative-bucket-size": ({"bucket_size": -40000000}, None, "0.19.2", InvalidValueError, "must be >= 1"),
    "zero-num-buckets": ({"num_buckets": 0}, None, "0.19.2", InvalidValueError, "must be >= 1"),
    "bad-sharding-strategy": ({"data_parallel_sharding_strategy": "zero3"}, None, "0.19.2", InvalidValueError,
                              "must be one of 'no_shard'"),
    "bad-dtype-string": ({"megatron_fsdp_main_grads_dtype": "fp8"}, None, "0.19.2", FieldTypeError,
                         "a torch.dtype or one of"),
    "patterns-bare-string": ({"param_name_patterns_for_fp32_local_accumulation": "router"}, None, "0.19.2",
                             FieldTypeError, "a list or tuple of str"),
    "old-name-wrong-type": ({"preserve_fp32_weights": "yes"}, None, "0.16.1", FieldTypeError,
                            "'preserve_fp32_weights': expected bool"),
    "alias-conflict-fsdp": ({"use_custom_fsdp": True, "use_megatron_fsdp": False}, None, "0.19.2",
                            ConflictingAliasError, "use_custom_fsdp=True, use_megatron_fsdp=False"),
    "alias-conflict-fp8-cache": ({"keep_fp8_transpose_cache_when_using_custom_fsdp": True,
                                  "keep_fp8_transpose_cache": False}, None, "0.13.1", ConflictingAliasError,
                                 "conflicting values for 'keep_fp8_transpose_cache'"),
    "alias-conflict-main-params": ({"preserve_fp32_weights": False, "megatron_fsdp_main_params_dtype": "fp32"},
                                   None, "0.17.1", ConflictingAliasError, "megatron_fsdp_main_params_dtype"),
    "alias-conflict-grad-reduce": ({"accumulate_allreduce_grads_in_fp32": True, "grad_reduce_in_fp32": False},
                                   ADAM, "0.16.1", ConflictingAliasError, "accumulate_allreduce_grads_in_fp32=True"),
    "unsupported-megatron-fsdp": ({"use_megatron_fsdp": True}, None, "0.11.0", UnsupportedFieldError,
                                  "exists in 0.14.0-0.19.2 (as use_custom_fsdp in 0.12.0-0.13.1)"),
    "unsupported-num-buckets": ({"num_buckets": 8}, None, "0.17.1", UnsupportedFieldError,
                                "'num_buckets'=8 is not supported by megatron-core 0.17.1; it exists in 0.18.0-0.19.2"),
    "unsupported-average-in-collective": ({"average_in_collective": True}, None, "0.7.0", UnsupportedFieldError,
                                          "it exists in 0.8.0-0.19.2"),
    "unsupported-dtype-on-bool-era": ({"megatron_fsdp_main_params_dtype": "bf16"}, None, "0.16.1",
                                      UnsupportedFieldError, "preserve_fp32_weights, its older form, cannot express"),
    "unsupported-unreleased-field": ({"use_layer_wise_param_layout": True}, None, "0.19.2", UnsupportedFieldError,
                                     "needs a megatron-core build with use_layer_wise_param_layout"),
    "muon-layer-wise-on-release": ({}, MUON_LW, "0.18.2", UnsupportedFieldError,
                                   "needs a megatron-core build with use_layer_wise_param_layout"),
    "post-init-fp32-local-accumulation": ({"param_name_patterns_for_fp32_local_accumulation": ["router"],
                                           "grad_reduce_in_fp32": True}, ADAM, "0.17.0", ConstraintError,
                                          "needs grad_reduce_in_fp32=False"),
    "post-init-num-buckets-bucket-size": ({"num_buckets": 4, "bucket_size": 10**6}, None, "0.18.2", ConstraintError,
                                          "Cannot specify both num_buckets and bucket_size"),
    "post-init-mxfp8-reuse": ({"reuse_grad_buf_for_mxfp8_param_ag": True}, None, "0.13.1", ConstraintError,
                              "Reuse grad buffer only when keeping params in MXFP8"),
    "post-init-max-pool-double-buffer": ({"megatron_fsdp_max_pool_double_buffer": True, "fsdp_double_buffer": False},
                                         None, "0.19.2", ConstraintError, "the class would silently replace the "
                                                                          "value you set"),
    "optimizer-unknown-dtype": ({}, {"use_precision_aware_optimizer": True, "main_grads_dtype": "bfloat15"},
                                "0.19.2", FieldTypeError, "optimizer_config.main_grads_dtype"),
    "version-does-not-parse": ({}, None, "v0.19-final", VersionError, "does not parse"),
    "version-older-than-0.7": ({}, None, "0.6.0", UnsupportedVersionError, "predates DistributedDataParallelConfig"),
}


@pytest.mark.parametrize("case", sorted(CATALOGUE))
def test_bad_input(case):
    overrides, optimizer, version, error, phrase = CATALOGUE[case]
    with pytest.raises(error) as err:
        compat.ddp_kwargs(overrides, optimizer, version, dtype_format="str")
    assert type(err.value) is error
    assert isinstance(err.value, CompatError) and isinstance(err.value, ValueError)
    assert phrase in str(err.value)


def test_nccl_ub_with_expandable_segments(monkeypatch):
    monkeypatch.setenv("PYTORCH_CUDA_ALLOC_CONF", "expandable_segments:True")
    with pytest.raises(ConstraintError, match="incompatible with PYTORCH_CUDA_ALLOC_CONF=expandable_segments"):
        compat.ddp_kwargs({"nccl_ub": True}, None, "0.15.3")


def test_build_without_megatron_installed(monkeypatch):
    import compat.build

    monkeypatch.setattr(compat.build.importlib.util, "find_spec", lambda name, *a: None)
    with pytest.raises(MegatronNotInstalledError, match="needs megatron-core installed"):
        compat.build_ddp_config({}, ADAM)


# Shapes the release reads as meant: accepted (the type policy in README "Type policy"); id: (config, overrides,
# version, kwargs expected)
ACCEPTED = {
    "none-read-by-truthiness": ("transformer", {"use_cpu_initialization": None}, "0.16.1",
                                {"use_cpu_initialization": None}),
    "none-guarded-by-is-none": ("mla", {"q_lora_rank": None}, "0.19.2", {"q_lora_rank": None}),
    "none-compared-with-eq": ("transformer", {"moe_flex_dispatcher_backend": None}, "0.16.1",
                              {"moe_flex_dispatcher_backend": None}),
    "bool-for-int": ("ddp", {"bucket_size": True}, "0.19.2", {"bucket_size": True}),
    "bools-for-int-list": ("transformer", {"window_attn_skip_freq": [True, False]}, "0.16.1",
                           {"window_attn_skip_freq": [True, False]}),
    "false-for-flag-literal-sent-as-none": ("transformer", {"fp8": False}, "0.16.1", {"fp8": None}),
    "enum-member-name": ("transformer", {"attention_backend": "flash"}, "0.16.1", {"attention_backend": "flash"}),
    "value-alias-to-release-spelling": ("transformer", {"experimental_attention_variant": "gdn",
                                                        "linear_attention_freq": 2}, "0.19.2",
                                        {"experimental_attention_variant": "gated_delta_net"}),
}
BASE = {"num_layers": 2, "hidden_size": 64, "num_attention_heads": 4}


@pytest.mark.parametrize("case", sorted(ACCEPTED))
def test_accepted_shapes(case):
    config, overrides, version, expected = ACCEPTED[case]
    base = BASE if config in ("transformer", "mla") else {}
    res = compat.resolve({**base, **overrides}, None, version, config=config)
    for name, value in expected.items():
        assert res.kwargs[name] == value and type(res.kwargs[name]) is type(value)
    if any(expected[k] != overrides[k] for k in expected):  # re-spelled: explain's notes say so
        assert any("sent as" in w for w in res.warnings)


@pytest.mark.parametrize("overrides, phrase", [
    ({"attention_backend": "no_such_backend"}, "must name a member of AttnBackend: flash, fused"),
    ({"attention_backend": 3}, "expected a AttnBackend member or its name"),
    ({"fp8": "false"}, "must be one of 'e4m3', 'hybrid'"),
    ({"use_cpu_initialization": "false"}, "expected bool, got str 'false' (no release accepts it)"),
])
def test_refused_without_megatron(overrides, phrase):
    with pytest.raises(CompatError) as err:
        compat.transformer_kwargs({**BASE, **overrides}, "0.16.1")
    assert isinstance(err.value, (FieldTypeError, InvalidValueError)) and phrase in str(err.value)
    assert err.value.field == next(iter(overrides)) and err.value.value == next(iter(overrides.values()))


def test_lenient_drops_a_value_the_class_would_override():
    overrides = {"megatron_fsdp_max_pool_double_buffer": True, "fsdp_double_buffer": False}
    with pytest.warns(compat.DroppedFieldWarning, match="dropped fsdp_double_buffer=False"):
        kwargs = compat.ddp_kwargs(overrides, None, "0.19.2", lenient=True)
    assert kwargs["fsdp_double_buffer"] is True and kwargs["megatron_fsdp_max_pool_double_buffer"] is True


def test_catalogue_is_big_enough():
    assert len(CATALOGUE) + 2 >= 30
