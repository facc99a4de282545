"""The seed's table (verl PR #7485) and the resolver's other rules, table-driven."""
import dataclasses
from types import SimpleNamespace

import pytest

from compat import FieldTypeError, ddp_kwargs, resolve, resolve_ddp_overrides


@pytest.mark.parametrize(
    "precision_aware, main_grads_dtype, expected",
    [(False, "fp32", True), (False, "bf16", True), (True, "fp32", True), (True, "bf16", False)],
)
def test_seed_table(precision_aware, main_grads_dtype, expected):
    opt = {"use_precision_aware_optimizer": precision_aware, "main_grads_dtype": main_grads_dtype}
    assert resolve_ddp_overrides({}, opt) == {"grad_reduce_in_fp32": expected}


@pytest.mark.parametrize("explicit", [True, False])
@pytest.mark.parametrize("precision_aware, main_grads_dtype", [(False, "fp32"), (True, "bf16")])
def test_explicit_value_wins(explicit, precision_aware, main_grads_dtype):
    opt = {"use_precision_aware_optimizer": precision_aware, "main_grads_dtype": main_grads_dtype}
    assert resolve_ddp_overrides({"grad_reduce_in_fp32": explicit}, opt) == {"grad_reduce_in_fp32": explicit}


def test_old_name_counts_as_explicit():
    out = resolve_ddp_overrides({"accumulate_allreduce_grads_in_fp32": False}, {"optimizer": "adam"})
    assert out == {"accumulate_allreduce_grads_in_fp32": False}


@pytest.mark.parametrize("overrides", [{}, None, {"overlap_grad_reduce": True}])
def test_no_optimizer_injects_nothing(overrides):
    assert resolve_ddp_overrides(overrides, None) == dict(overrides or {})


@dataclasses.dataclass
class _OptDataclass:
    optimizer: str = "adam"
    use_precision_aware_optimizer: bool = True
    main_grads_dtype: str = "bf16"


class _GetOnly:
    """OmegaConf-like: answers .get()."""

    def __init__(self, **kw):
        self._kw = kw

    def get(self, key, default=None):
        return self._kw.get(key, default)


@pytest.mark.parametrize("opt", [
    {"use_precision_aware_optimizer": True, "main_grads_dtype": "bf16"},
    _OptDataclass(),
    SimpleNamespace(use_precision_aware_optimizer=True, main_grads_dtype="bfloat16"),
    _GetOnly(use_precision_aware_optimizer=True, main_grads_dtype="torch.bfloat16"),
])
def test_optimizer_config_shapes(opt):
    assert resolve_ddp_overrides({}, opt) == {"grad_reduce_in_fp32": False}


@pytest.mark.parametrize("opt, explicit, expected", [
    ({"optimizer": "muon", "use_layer_wise_distributed_optimizer": True}, {},
     {"grad_reduce_in_fp32": True, "use_layer_wise_param_layout": True}),
    ({"optimizer": "Muon", "use_layer_wise_distributed_optimizer": True}, {"use_layer_wise_param_layout": False},
     {"grad_reduce_in_fp32": True, "use_layer_wise_param_layout": False}),
    ({"optimizer": "muon", "use_layer_wise_distributed_optimizer": False}, {}, {"grad_reduce_in_fp32": True}),
    ({"optimizer": "adam", "use_layer_wise_distributed_optimizer": True}, {}, {"grad_reduce_in_fp32": True}),
])
def test_muon_layer_wise_setdefault(opt, explicit, expected):
    assert resolve_ddp_overrides(explicit, opt) == expected


def test_fp32_local_accumulation_patterns_force_bf16_reduce_with_reason():
    res = resolve({"param_name_patterns_for_fp32_local_accumulation": ["router"]}, {"optimizer": "adam"}, "0.17.1")
    field = res.fields["grad_reduce_in_fp32"]
    assert (field.value, field.source) == (False, "resolver")
    assert "param_name_patterns_for_fp32_local_accumulation" in field.rule


def test_unknown_optimizer_dtype_string_is_a_typed_error():
    with pytest.raises(FieldTypeError, match="main_grads_dtype"):
        resolve_ddp_overrides({}, {"use_precision_aware_optimizer": True, "main_grads_dtype": "bf17"})


def test_layer_wise_layout_on_a_release_without_it_names_the_build_needed():
    opt = {"optimizer": "muon", "use_layer_wise_distributed_optimizer": True}
    with pytest.raises(Exception, match="needs a megatron-core build with use_layer_wise_param_layout"):
        ddp_kwargs({}, opt, "0.19.2")
    assert ddp_kwargs({"use_layer_wise_param_layout": False}, opt, "0.19.2") == {"grad_reduce_in_fp32": True}


def test_resolver_provenance_in_rich_api():
    res = resolve({}, {"optimizer": "adam"}, "0.16.1")
    field = res.fields["grad_reduce_in_fp32"]
    assert (field.value, field.source) == (True, "resolver") and "7485" in field.rule
    assert res.fields["overlap_grad_reduce"].source == "megatron-default"
    assert res.kwargs == {"grad_reduce_in_fp32": True}
