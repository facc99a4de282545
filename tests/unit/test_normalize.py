"""Renames, absent fields, type errors and __post_init__ pre-checks against the registry (no megatron needed)."""
import warnings

import pytest

from compat import (
    ConflictingAliasError,
    ConstraintError,
    FieldTypeError,
    InvalidValueError,
    UnknownFieldError,
    UnsupportedFieldError,
    ddp_kwargs,
    resolve,
)
from compat.errors import DroppedFieldWarning


def kw(overrides, version):
    return ddp_kwargs(overrides, None, version, dtype_format="str")


@pytest.mark.parametrize("overrides, version, expected", [
    # use_custom_fsdp -> use_megatron_fsdp (0.14): the old flag is dead from 0.14, so it must become the new one
    ({"use_megatron_fsdp": True}, "0.13.1", {"use_custom_fsdp": True}),
    ({"use_megatron_fsdp": True}, "0.14.0", {"use_megatron_fsdp": True}),
    ({"use_custom_fsdp": True}, "0.13.1", {"use_custom_fsdp": True}),
    ({"use_custom_fsdp": True}, "0.14.0", {"use_megatron_fsdp": True}),
    ({"use_custom_fsdp": True}, "0.19.2", {"use_megatron_fsdp": True}),
    # keep_fp8_transpose_cache (0.14), both directions
    ({"keep_fp8_transpose_cache": True}, "0.13.1", {"keep_fp8_transpose_cache_when_using_custom_fsdp": True}),
    ({"keep_fp8_transpose_cache_when_using_custom_fsdp": True}, "0.14.0", {"keep_fp8_transpose_cache": True}),
    # preserve_fp32_weights (bool) <-> megatron_fsdp_main_params_dtype (dtype), 0.17
    ({"preserve_fp32_weights": False}, "0.16.1", {"preserve_fp32_weights": False}),
    ({"preserve_fp32_weights": False}, "0.17.0", {"megatron_fsdp_main_params_dtype": None}),
    ({"preserve_fp32_weights": True}, "0.17.0", {"megatron_fsdp_main_params_dtype": "float32"}),
    ({"megatron_fsdp_main_params_dtype": None}, "0.16.1", {"preserve_fp32_weights": False}),
    ({"megatron_fsdp_main_params_dtype": "fp32"}, "0.16.1", {"preserve_fp32_weights": True}),
    ({"megatron_fsdp_main_params_dtype": "bf16"}, "0.17.1", {"megatron_fsdp_main_params_dtype": "bfloat16"}),
    # the pre-0.7 kwarg name
    ({"accumulate_allreduce_grads_in_fp32": True}, "0.7.0", {"grad_reduce_in_fp32": True}),
])
def test_renames_both_ways(overrides, version, expected):
    assert kw(overrides, version) == expected


def test_dtype_value_that_the_old_bool_cannot_express():
    with pytest.raises(UnsupportedFieldError, match="preserve_fp32_weights, its older form, cannot express"):
        kw({"megatron_fsdp_main_params_dtype": "bf16"}, "0.16.1")


@pytest.mark.parametrize("overrides, version", [
    ({"use_custom_fsdp": True, "use_megatron_fsdp": False}, "0.19.2"),
    ({"keep_fp8_transpose_cache": True, "keep_fp8_transpose_cache_when_using_custom_fsdp": False}, "0.13.1"),
    ({"preserve_fp32_weights": True, "megatron_fsdp_main_params_dtype": None}, "0.17.1"),
    ({"grad_reduce_in_fp32": True, "accumulate_allreduce_grads_in_fp32": False}, "0.16.1"),
])
def test_old_and_new_name_with_different_values_conflict(overrides, version):
    with pytest.raises(ConflictingAliasError) as err:
        kw(overrides, version)
    for key in overrides:
        assert key in str(err.value)


def test_old_and_new_name_with_the_same_value_is_fine():
    assert kw({"use_custom_fsdp": True, "use_megatron_fsdp": True}, "0.13.1") == {"use_custom_fsdp": True}


@pytest.mark.parametrize("overrides, version", [
    ({"use_megatron_fsdp": False}, "0.10.0"),
    ({"num_buckets": None}, "0.17.1"),
    ({"param_name_patterns_for_fp32_local_accumulation": []}, "0.16.1"),
    ({"megatron_fsdp_main_params_dtype": "fp32"}, "0.11.0"),
    ({"fsdp_all_gather_in_start_param_sync": True}, "0.16.1"),
    ({"average_in_collective": False}, "0.7.0"),
])
def test_absent_field_equal_to_implied_default_is_dropped_and_recorded(overrides, version):
    res = resolve(overrides, None, version)
    assert res.kwargs == {}
    (name,) = overrides
    assert [d.name for d in res.dropped] == [name]
    assert res.fields[name].source == "dropped: equals implied default"


@pytest.mark.parametrize("overrides, version, supported", [
    ({"use_megatron_fsdp": True}, "0.11.0", "0.14.0-0.19.2 (as use_custom_fsdp in 0.12.0-0.13.1)"),
    ({"num_buckets": 4}, "0.17.1", "0.18.0-0.19.2"),
    ({"fsdp_all_gather_in_start_param_sync": False}, "0.16.1", "0.17.0-0.19.2"),
    ({"average_in_collective": True}, "0.7.0", "0.8.0-0.19.2"),
])
def test_absent_field_with_other_value_is_an_error_naming_field_value_and_versions(overrides, version, supported):
    with pytest.raises(UnsupportedFieldError) as err:
        kw(overrides, version)
    (name, value), = overrides.items()
    assert name in str(err.value) and repr(value) in str(err.value)
    assert f"megatron-core {version}" in str(err.value) and supported in str(err.value)


def test_lenient_mode_drops_with_a_warning_and_reports_it():
    with pytest.warns(DroppedFieldWarning, match="num_buckets"):
        res = resolve({"num_buckets": 4, "overlap_grad_reduce": True}, None, "0.17.1", lenient=True)
    assert res.kwargs == {"overlap_grad_reduce": True}
    assert [(d.name, d.value, d.source) for d in res.dropped] == [("num_buckets", 4, "dropped: lenient")]
    assert any("num_buckets" in w for w in res.warnings)


@pytest.mark.parametrize("key, suggestion", [
    ("bucket_sise", "bucket_size"), ("grad_reduce_in_fp16", "grad_reduce_in_fp32"),
    ("use_megatron_fdsp", "use_megatron_fsdp"), ("overlap_grad_reduse", "overlap_grad_reduce"),
])
def test_unknown_key_suggests_close_match(key, suggestion):
    with pytest.raises(UnknownFieldError, match=f"did you mean '{suggestion}'"):
        kw({key: True}, "0.19.2")


@pytest.mark.parametrize("field, value, expected", [
    ("grad_reduce_in_fp32", "true", "bool"),            # a str for a bool
    ("overlap_grad_reduce", 1, "bool"),                 # an int for a bool
    ("use_distributed_optimizer", None, "None is not allowed"),
    ("bucket_size", [1], "int"),  # a list for an int (a bool is an int to Python and Megatron: accepted)
    ("bucket_size", 1.5, "int"),
    ("num_distributed_optimizer_instances", "2", "int"),
    ("data_parallel_sharding_strategy", 3, "str"),
    ("megatron_fsdp_main_grads_dtype", "fp8", "torch.dtype"),  # a bad dtype string
    ("megatron_fsdp_grad_comm_dtype", 3.0, "torch.dtype"),
    ("param_name_patterns_for_fp32_local_accumulation", "router", "list or tuple of str"),
    ("param_name_patterns_for_fp32_local_accumulation", ["a", 1], "list or tuple of str"),
])
def test_type_errors(field, value, expected):
    with pytest.raises(FieldTypeError, match=expected) as err:
        kw({field: value}, "0.19.2")
    assert field in str(err.value)
    assert isinstance(err.value, TypeError) and isinstance(err.value, ValueError)


@pytest.mark.parametrize("field, value", [
    ("bucket_size", -1), ("bucket_size", 0), ("num_buckets", 0), ("num_distributed_optimizer_instances", 0),
    ("data_parallel_sharding_strategy", "full"), ("outer_dp_sharding_strategy", "optim_grads"),
])
def test_invalid_values(field, value):
    with pytest.raises(InvalidValueError, match=field):
        kw({field: value}, "0.19.2")


@pytest.mark.parametrize("dtype", ["fp32", "float32", "torch.float32", "FP32"])
def test_dtype_spellings(dtype):
    assert kw({"megatron_fsdp_main_grads_dtype": dtype}, "0.19.2") == {"megatron_fsdp_main_grads_dtype": "float32"}


@pytest.mark.parametrize("overrides, version, rule", [
    ({"param_name_patterns_for_fp32_local_accumulation": ["x"], "grad_reduce_in_fp32": True}, "0.17.0",
     "fp32-local-accumulation-needs-bf16-reduce"),
    ({"num_buckets": 2, "bucket_size": 1000}, "0.18.0", "Cannot specify both num_buckets and bucket_size"),
    ({"reuse_grad_buf_for_mxfp8_param_ag": True}, "0.13.0", "Reuse grad buffer only when keeping params in MXFP8"),
    ({"reuse_grad_buf_for_mxfp8_param_ag": True, "fp8_param_gather": False}, "0.19.2",
     "Reuse grad buffer only when keeping params in MXFP8"),
    ({"megatron_fsdp_max_pool_double_buffer": True, "fsdp_double_buffer": False}, "0.19.0",
     "max-pool-double-buffer-forces-double-buffer"),
])
def test_post_init_constraints_are_prechecked(overrides, version, rule):
    with pytest.raises(ConstraintError, match=rule) as err:
        kw(overrides, version)
    for key in overrides:
        assert key in str(err.value)


@pytest.mark.parametrize("overrides, version, expected", [
    ({"reuse_grad_buf_for_mxfp8_param_ag": True}, "0.12.3", None),  # no field before 0.13: unsupported, not a check
    ({"reuse_grad_buf_for_mxfp8_param_ag": True, "fp8_param_gather": True}, "0.13.0",
     {"reuse_grad_buf_for_mxfp8_param_ag": True, "fp8_param_gather": True}),
    ({"num_buckets": 2}, "0.18.0", {"num_buckets": 2}),
    ({"megatron_fsdp_max_pool_double_buffer": True}, "0.19.0",
     {"megatron_fsdp_max_pool_double_buffer": True, "fsdp_double_buffer": True}),
])
def test_constraints_only_where_they_apply(overrides, version, expected):
    if expected is None:
        with pytest.raises(UnsupportedFieldError):
            kw(overrides, version)
    else:
        assert kw(overrides, version) == expected


def test_coercion_is_reported_as_coerced():
    res = resolve({"megatron_fsdp_max_pool_double_buffer": True}, None, "0.19.2")
    assert res.fields["fsdp_double_buffer"].source == "coerced"


def test_nccl_ub_vs_expandable_segments_reads_the_environment(monkeypatch):
    monkeypatch.setenv("PYTORCH_CUDA_ALLOC_CONF", "max_split_size_mb:64,expandable_segments:True")
    with pytest.raises(ConstraintError, match="nccl-ub-vs-expandable-segments"):
        kw({"nccl_ub": True}, "0.16.1")
    assert kw({"nccl_ub": True}, "0.13.1") == {"nccl_ub": True}  # 0.13 has no such check
    monkeypatch.delenv("PYTORCH_CUDA_ALLOC_CONF")
    assert kw({"nccl_ub": True}, "0.16.1") == {"nccl_ub": True}


def test_explicit_value_never_silently_lost_when_equal_to_default_on_present_field():
    assert kw({"bucket_size": None, "overlap_grad_reduce": False}, "0.19.2") == \
        {"bucket_size": None, "overlap_grad_reduce": False}


def test_no_warnings_on_exact_versions():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        kw({}, "0.19.2")
