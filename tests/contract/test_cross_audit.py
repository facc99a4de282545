"""Cross-config rules and ``compat.audit`` on real objects of the session's megatron-core."""
import warnings

import pytest
from live_helpers import BASE, battery, live_class, setup

import compat
from compat import AuditError, ConstraintError
from compat import version as v
from compat.kwargs import materialize
from compat.registry import cross_rules, registry

pytestmark = pytest.mark.megatron


@pytest.fixture(scope="module")
def installed():
    return v.installed_version()


def _quiet(fn, *args, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return fn(*args, **kwargs)


@pytest.mark.parametrize("config", ["ddp", "optimizer", "transformer", "mla"])
def test_an_untouched_object_audits_clean(config, installed):
    """No false alarm: __post_init__'s own rewrites (ffn_hidden_size, init_method, ...) are not differences."""
    if config == "ddp":
        cls, cases = live_class("ddp"), [{}, {"overlap_grad_reduce": True, "bucket_size": 1000}]
    else:
        cls, entry = setup(config, installed)
        cases = battery(config, set(entry.names))
    for overrides in cases:
        res = compat.resolve(overrides, config=config, version=installed)
        obj = _quiet(cls, **materialize(res.kwargs, res))
        assert compat.audit(obj, res) == [], overrides
        assert compat.audit(obj, res, strict=True) == []


def test_a_wrapper_that_flips_grad_reduce_in_fp32_is_caught(installed):
    """Megatron-Bridge's MixedPrecisionConfig overwrote a user's grad_reduce_in_fp32=False after resolution."""
    res = compat.resolve({"grad_reduce_in_fp32": False}, {"optimizer": "adam"}, installed)
    ddp = compat.build_ddp_config({"grad_reduce_in_fp32": False}, {"optimizer": "adam"})
    ddp.grad_reduce_in_fp32 = True  # what the wrapper did
    [diff] = compat.audit(ddp, res)
    assert (diff.field, diff.expected, diff.actual) == ("grad_reduce_in_fp32", False, True)
    with pytest.raises(AuditError, match="grad_reduce_in_fp32") as err:
        compat.audit(ddp, res, strict=True)
    assert err.value.differences == [diff]


def test_a_field_set_after_construction_that_post_init_refuses_is_caught(installed):
    cls, entry = setup("transformer", installed)
    overrides = {**BASE["transformer"], "fp16": True}
    res = compat.resolve(overrides, config="transformer", version=installed)
    tf = _quiet(compat.build_transformer_config, overrides, cls=cls)
    tf.bf16 = True  # skips __post_init__, which refuses fp16 together with bf16
    diffs = compat.audit(tf, res)
    assert [(d.field, d.kind) for d in diffs] == [("bf16", "value"), ("bf16", "check")]
    assert "fp16" in diffs[1].reason and "transformer_config.py" in diffs[1].reason
    with pytest.raises(AuditError):
        compat.audit(tf, res, strict=True)
    with pytest.raises(ConstraintError):  # the same values given to the constructor: refused up front
        compat.resolve({**overrides, "bf16": True}, config="transformer", version=installed)


def test_optimizer_field_set_after_construction(installed):
    cls, entry = setup("optimizer", installed)
    if "use_precision_aware_optimizer" not in entry.names:
        pytest.skip(f"megatron-core {installed} has no precision-aware optimizer")
    res = compat.resolve({"optimizer": "sgd"}, config="optimizer", version=installed)
    opt = _quiet(compat.build_optimizer_config, {"optimizer": "sgd"}, cls=cls)
    opt.main_grads_dtype = __import__("torch").bfloat16  # only the precision-aware optimizer allows it
    kinds = {(d.field, d.kind) for d in compat.audit(opt, res)}
    assert kinds == {("main_grads_dtype", "value"), ("main_grads_dtype", "check")}


def _overlap_rule_applies(installed) -> bool:
    rule = next(r for r in cross_rules()["rules"] if r["id"] == "overlap-param-gather-agrees")
    reg = registry()
    return v.at_least(installed, rule["since"]) and all(
        "overlap_param_gather" in reg.schema(installed, config=key).names for key in ("ddp", "optimizer"))


def test_overlap_param_gather_follows_a_real_optimizer_config(installed):
    cls, entry = setup("optimizer", installed)
    if not _overlap_rule_applies(installed):
        pytest.skip(f"overlap-param-gather-agrees does not apply to megatron-core {installed}")
    opt = _quiet(cls, overlap_param_gather=True)
    ddp = _quiet(compat.build_ddp_config, {"use_distributed_optimizer": True}, opt)
    assert ddp.overlap_param_gather is True
    res = compat.resolve({"use_distributed_optimizer": True}, opt, installed)
    assert res.fields["overlap_param_gather"].source == "cross-config rule"
    with pytest.raises(ConstraintError, match="overlap-param-gather-agrees"):
        compat.build_ddp_config({"overlap_param_gather": False}, opt)


def test_configs_resolved_together_build_real_objects(installed):
    optimizer = {"optimizer": "adam", "lr": 1e-4, "bf16": True, "use_distributed_optimizer": True}
    ddp = {"use_distributed_optimizer": True, "overlap_grad_reduce": True}
    transformer = {**BASE["transformer"], "bf16": True}
    if _overlap_rule_applies(installed):
        ddp["overlap_param_gather"] = True
    together = compat.resolve_configs(ddp=ddp, optimizer=optimizer, transformer=transformer, version=installed)
    objs = {}
    for key, res in together.items():
        cls = live_class(key)
        objs[key] = _quiet(cls, **materialize(res.kwargs, res))
        assert compat.audit(objs[key], res) == []
    assert objs["ddp"].grad_reduce_in_fp32 is True  # the FP32-by-default rule saw the optimizer
    if "overlap_param_gather" in ddp:
        assert objs["optimizer"].overlap_param_gather is True  # the optimizer followed DDP (equal rule)
        assert together.optimizer.fields["overlap_param_gather"].source == "cross-config rule"
