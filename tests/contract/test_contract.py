"""Our output against the real DistributedDataParallelConfig of the session's megatron-core."""
import dataclasses

import pytest

import compat
from compat import ConstraintError, UnsupportedFieldError
from compat import version as v
from compat.build import live_schema
from compat.registry import registry, rules
from compat.resolution import _applies

pytestmark = pytest.mark.megatron  # skipped by conftest.py where megatron-core is not installed


@pytest.fixture(scope="module")
def cls():
    from megatron.core.distributed import DistributedDataParallelConfig

    return DistributedDataParallelConfig


@pytest.fixture(scope="module")
def installed():
    return v.installed_version()


@pytest.fixture(scope="module")
def entry(installed):
    reg = registry()
    assert installed in reg.releases, f"megatron-core {installed} is not in the registry"
    return reg.schema(installed)


def test_live_dataclass_equals_registry_entry(cls, entry):
    live = dataclasses.fields(cls)
    assert [f.name for f in live] == list(entry.names)
    for f, known in zip(live, entry.fields):
        default = f.default if f.default is not dataclasses.MISSING else f.default_factory()
        if known.default_text.startswith("torch."):
            assert str(default) == known.default_text, f.name
        else:
            assert (tuple(default) if isinstance(default, (list, tuple)) else default) == known.default, f.name


def test_live_schema_post_init_matches_registry(cls, entry):
    schema = live_schema(cls)
    assert schema.names == entry.names
    assert schema.post_init_reads == entry.post_init_reads


def _battery(entry):
    """Canonical inputs that this version must accept, each with the kwargs it must produce."""
    names = set(entry.names)
    cases = [({}, None), ({}, {"optimizer": "adam"}),
             ({"overlap_grad_reduce": True, "use_distributed_optimizer": True, "bucket_size": 1000}, None)]
    for pao, dtype in [(False, "fp32"), (False, "bf16"), (True, "fp32"), (True, "bf16")]:
        cases.append(({}, {"optimizer": "adam", "use_precision_aware_optimizer": pao, "main_grads_dtype": dtype}))
    cases += [({"grad_reduce_in_fp32": False}, {"optimizer": "adam"}),
              ({"accumulate_allreduce_grads_in_fp32": True}, None)]
    if "use_custom_fsdp" in names or "use_megatron_fsdp" in names:
        cases += [({"use_megatron_fsdp": True}, None), ({"use_custom_fsdp": True}, None)]
    if {"keep_fp8_transpose_cache", "keep_fp8_transpose_cache_when_using_custom_fsdp"} & names:
        cases += [({"keep_fp8_transpose_cache": True}, None),
                  ({"keep_fp8_transpose_cache_when_using_custom_fsdp": True}, None)]
    if {"preserve_fp32_weights", "megatron_fsdp_main_params_dtype"} & names:
        cases += [({"preserve_fp32_weights": False}, None), ({"megatron_fsdp_main_params_dtype": "fp32"}, None)]
    if "megatron_fsdp_main_params_dtype" in names:
        cases.append(({"megatron_fsdp_main_params_dtype": "bf16"}, None))
    if "param_name_patterns_for_fp32_local_accumulation" in names:
        cases.append(({"param_name_patterns_for_fp32_local_accumulation": ["router"]}, {"optimizer": "adam"}))
    if "num_buckets" in names:
        cases.append(({"num_buckets": 4}, None))
    if "megatron_fsdp_max_pool_double_buffer" in names:
        cases.append(({"megatron_fsdp_max_pool_double_buffer": True}, None))
    # values equal to the implied default on fields this version lacks: dropped, recorded, and accepted
    implied = {"average_in_collective": False, "use_megatron_fsdp": False, "num_buckets": None,
               "param_name_patterns_for_fp32_local_accumulation": [], "fsdp_all_gather_in_start_param_sync": True,
               "megatron_fsdp_max_pool_double_buffer": False, "use_layer_wise_param_layout": False}
    cases += [({k: val}, None) for k, val in implied.items()
              if k not in names and not (k == "use_megatron_fsdp" and "use_custom_fsdp" in names)]
    return cases


def test_battery_builds_and_every_value_survives_post_init(cls, entry):
    for overrides, opt in _battery(entry):
        res = compat.resolve(overrides, opt, schema=live_schema(cls))
        config = compat.build_ddp_config(overrides, opt)
        assert type(config) is cls
        for name, value in compat.ddp_kwargs(overrides, opt, entry.version).items():
            assert getattr(config, name) == value, (overrides, name)
        for field in res.dropped:
            assert field.source == "dropped: equals implied default" and field.target_name is None
        if opt is not None and "grad_reduce_in_fp32" not in overrides and \
                "accumulate_allreduce_grads_in_fp32" not in overrides:
            expected = not (opt.get("use_precision_aware_optimizer") and opt.get("main_grads_dtype") == "bf16") \
                and not overrides.get("param_name_patterns_for_fp32_local_accumulation")
            assert config.grad_reduce_in_fp32 is expected, (overrides, opt)


def test_renamed_fields_land_on_the_field_megatron_reads(cls, entry):
    names = set(entry.names)
    if "use_megatron_fsdp" in names:
        assert compat.build_ddp_config({"use_custom_fsdp": True}).use_megatron_fsdp is True
    elif "use_custom_fsdp" in names:
        assert compat.build_ddp_config({"use_megatron_fsdp": True}).use_custom_fsdp is True
    if "megatron_fsdp_main_params_dtype" in names:
        assert compat.build_ddp_config({"preserve_fp32_weights": False}).megatron_fsdp_main_params_dtype is None
    elif "preserve_fp32_weights" in names:
        assert compat.build_ddp_config({"megatron_fsdp_main_params_dtype": None}).preserve_fp32_weights is False


def test_fields_this_version_cannot_honour_raise(cls, entry):
    newest_only = "use_layer_wise_param_layout" if entry.version == registry().newest() else next(
        n for n in reversed(registry().schema(registry().newest()).names)
        if n not in entry.names and n not in {"use_custom_fsdp"})
    with pytest.raises(UnsupportedFieldError, match=newest_only):
        compat.build_ddp_config({newest_only: True if newest_only != "num_buckets" else 4})
    with pytest.raises(UnsupportedFieldError, match="needs a megatron-core build with use_layer_wise_param_layout"):
        compat.build_ddp_config({}, {"optimizer": "muon", "use_layer_wise_distributed_optimizer": True})


VIOLATIONS = {
    "mxfp8-reuse-needs-fp8-param-gather": {"reuse_grad_buf_for_mxfp8_param_ag": True},
    "fp32-local-accumulation-needs-bf16-reduce": {"param_name_patterns_for_fp32_local_accumulation": ("x",),
                                                  "grad_reduce_in_fp32": True},
    "num-buckets-excludes-bucket-size": {"num_buckets": 2, "bucket_size": 1000},
}


@pytest.mark.parametrize("rule_id", sorted(VIOLATIONS))
def test_known_post_init_checks_both_sides(cls, entry, rule_id):
    rule = next(r for r in rules()["constraints"] if r["id"] == rule_id)
    kwargs = VIOLATIONS[rule_id]
    if not _applies(rule, entry):
        pytest.skip(f"{rule_id} does not apply to megatron-core {entry.version}")
    with pytest.raises(ConstraintError, match=rule_id):
        compat.build_ddp_config(kwargs)
    with pytest.raises((AssertionError, ValueError)):  # Megatron's own check, hit without the shim
        cls(**kwargs)


def test_coercion_mirrors_megatron(cls, entry):
    rule = next(r for r in rules()["constraints"] if r["kind"] == "coerce")
    if not _applies(rule, entry):
        pytest.skip(f"{rule['id']} does not apply to megatron-core {entry.version}")
    raw = cls(megatron_fsdp_max_pool_double_buffer=True)
    assert raw.fsdp_double_buffer is True
    assert compat.build_ddp_config({"megatron_fsdp_max_pool_double_buffer": True}).fsdp_double_buffer is True


def test_every_call_returns_a_new_object(cls):
    a, b = compat.build_ddp_config({"bucket_size": 1000}), compat.build_ddp_config({"bucket_size": 1000})
    assert a is not b
    a.bucket_size = None  # what DistributedDataParallel.__init__ does to the config it is given
    assert b.bucket_size == 1000 and compat.build_ddp_config({"bucket_size": 1000}).bucket_size == 1000


def test_live_dataclass_is_the_truth_for_builds_with_extra_fields(cls, entry):
    """Megatron-LM's dev branch reports a release version but has extra fields; Megatron-Bridge subclasses the
    real class to backport fields. Either way the live dataclass decides, not the version string."""
    @dataclasses.dataclass
    class WithLayerWiseLayout(cls):
        use_layer_wise_param_layout: bool = False
        dev_only_knob: int = 3

    muon = {"optimizer": "muon", "use_layer_wise_distributed_optimizer": True}
    config = compat.build_ddp_config({"dev_only_knob": 5}, muon, cls=WithLayerWiseLayout)
    assert type(config) is WithLayerWiseLayout
    assert (config.use_layer_wise_param_layout, config.dev_only_knob, config.grad_reduce_in_fp32) == (True, 5, True)
    explicit = compat.build_ddp_config({"use_layer_wise_param_layout": False}, muon, cls=WithLayerWiseLayout)
    assert explicit.use_layer_wise_param_layout is False  # setdefault: never overrides the user
    with pytest.raises(compat.UnknownFieldError, match="dev_only_knob"):
        compat.build_ddp_config({"dev_only_knob": 5}, muon)  # the plain release has no such field
