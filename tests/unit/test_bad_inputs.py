"""Bad-input catalogue: every entry gets the exact error class and the key phrase of its message."""
import pytest

import compat
from compat import (CompatError, ConflictingAliasError, ConstraintError, FieldTypeError, InvalidValueError,
                    MegatronNotInstalledError, UnknownFieldError, UnsupportedFieldError, UnsupportedVersionError,
                    VersionError)

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
    "none-for-bool": ({"use_distributed_optimizer": None}, None, "0.19.2", FieldTypeError, "None is not allowed"),
    "bool-for-int": ({"bucket_size": True}, None, "0.19.2", FieldTypeError, "expected int, got bool"),
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
                                          "set only one of num_buckets and bucket_size"),
    "post-init-mxfp8-reuse": ({"reuse_grad_buf_for_mxfp8_param_ag": True}, None, "0.13.1", ConstraintError,
                              "needs fp8_param_gather=True"),
    "post-init-max-pool-double-buffer": ({"megatron_fsdp_max_pool_double_buffer": True, "fsdp_double_buffer": False},
                                         None, "0.19.2", ConstraintError, "forces fsdp_double_buffer=True"),
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


def test_catalogue_is_big_enough():
    assert len(CATALOGUE) + 2 >= 30
