"""The runtime's shared views, each one place: the target matched once per call, one effective config, one value
equality, one optimizer reader."""
import dataclasses
import warnings
from types import SimpleNamespace

import pytest

import compat
from compat import version as compat_version
from compat.canonical import canonical
from compat.effective import EffectiveConfig, post_init_values
from compat.errors import NewerVersionWarning
from compat.evaluate import UNKNOWN, Dtype
from compat.optimizer_reader import OptimizerReader
from compat.registry import registry
from compat.target import LIVE, target_for
from compat.value_equality import same_value

REG = registry()


# ---- one target per call ---------------------------------------------------------------------------------
@pytest.fixture
def matches(monkeypatch):
    """Counts the calls that place a version among the registry's releases."""
    seen = []
    real = compat_version.match_release

    def counting(version, known):
        seen.append(str(version))
        return real(version, known)

    monkeypatch.setattr(compat_version, "match_release", counting)
    return seen


@pytest.mark.parametrize("call", [
    lambda: compat.ddp_kwargs({"use_distributed_optimizer": True}, {"optimizer": "adam", "bf16": True},
                              version="0.19.2", dtype_format="str"),
    lambda: compat.resolve_configs(ddp={"use_distributed_optimizer": True}, optimizer={"optimizer": "adam"},
                                   transformer={"num_layers": 2, "hidden_size": 64, "num_attention_heads": 4},
                                   version="0.19.2"),
], ids=["ddp_kwargs with an optimizer", "resolve_configs of three configs"])
def test_a_call_matches_its_version_once(matches, call):
    call()
    assert matches == ["0.19.2"]


def test_newer_version_warns_once_per_resolve_configs():
    newest = REG.newest()
    newer = f"{compat_version.parse(newest).major}.{compat_version.parse(newest).minor + 5}.0"
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        out = compat.resolve_configs(ddp={}, optimizer={}, transformer={"num_layers": 2, "hidden_size": 64,
                                                                         "num_attention_heads": 4}, version=newer)
    assert [w.category for w in caught] == [NewerVersionWarning]
    assert out.version == newest and out.ddp.match == "newer"


def test_target_describes_a_prerelease_by_its_base_release():
    target = target_for("0.19.2rc1")
    assert (target.release, target.how) == ("0.19.2", "base")
    assert target.schema("ddp") is REG.schema("0.19.2", config="ddp")
    assert target.notes and "0.19.2rc1" in target.notes[0]


def test_nearest_schema_reaches_a_config_the_release_lacks():
    target = target_for("0.18.0")
    assert target.nearest_schema("adam_optimizer").version == "0.17.1"  # the subclass existed in 0.16-0.17 only
    with pytest.raises(compat.ConfigAbsentError):
        target.schema("adam_optimizer")


def test_live_target_names_the_release_its_label_points_to():
    release = REG.schema("0.19.2", config="ddp")
    lacking = dataclasses.replace(release, source="live",
                                  fields=tuple(f for f in release.fields if f.name != "overlap_grad_reduce"))
    target = target_for(live=lacking)
    assert target.how == LIVE and target.schema("ddp") is lacking
    assert "0.19.2 has it" in target.label_hint("overlap_grad_reduce", "ddp")
    assert target.label_hint("no_such_field", "ddp") == ""
    assert target_for("0.19.2").label_hint("overlap_grad_reduce", "ddp") == ""  # a registry target: no hint


# ---- one effective config ----------------------------------------------------------------------------------
def test_effective_config_by_target_name_follows_a_rename():
    """megatron_fsdp_main_params_dtype is preserve_fp32_weights (True/False) on 0.12-0.16."""
    schema = REG.schema("0.16.1", config="ddp")
    canon = canonical(REG, None, config="ddp")
    view = EffectiveConfig(schema, canon, {"megatron_fsdp_main_params_dtype": None})
    assert view.by_target()["preserve_fp32_weights"] is False  # the default is True
    assert view.by_canonical()["megatron_fsdp_main_params_dtype"] is None
    default = EffectiveConfig(schema, canon, {}).by_canonical()["megatron_fsdp_main_params_dtype"]
    assert default == "float32"  # the old name's default True, read forward through the rename's map


def test_effective_config_leaves_out_a_value_the_old_name_cannot_express():
    schema = REG.schema("0.16.1", config="ddp")
    view = EffectiveConfig(schema, canonical(REG, None, config="ddp"), {"megatron_fsdp_main_params_dtype": "bfloat16"})
    assert "preserve_fp32_weights" not in view.kwargs()  # placing it is what refuses it


def test_post_init_values_types_dtypes_and_marks_unknown_defaults():
    schema = REG.schema("0.19.2", config="transformer")
    env = post_init_values(schema, {"params_dtype": "bfloat16", "num_layers": 2})
    assert env["params_dtype"] == Dtype("bfloat16") and env["num_layers"] == 2
    assert env["activation_func"] is UNKNOWN  # F.gelu: an expression kept as text
    assert env["attention_backend"].name == "auto"  # AttnBackend.auto: the release's Enum member
    again = post_init_values(schema, {})
    assert again["params_dtype"] == Dtype("float32") and again["num_layers"] == 0  # the default: nothing shared


# ---- one value equality ------------------------------------------------------------------------------------
class _NoTruth:
    def __eq__(self, other):
        return self

    def __bool__(self):
        raise ValueError("ambiguous")


@pytest.mark.parametrize("a, b, same", [
    (1, 1.0, True), (True, 1, False), (False, 0, False), (True, True, True), ([1, 2], (1, 2), True),
    ([1, [2, 3]], (1, (2, 3)), True), ([1], [1, 2], False), ("a", "a", True), (None, None, True), (None, 0, False),
    (UNKNOWN, UNKNOWN, True), (UNKNOWN, 1, False), (Dtype("bfloat16"), Dtype("bfloat16"), True),
    (Dtype("bfloat16"), "bfloat16", False),
])
def test_same_value(a, b, same):
    assert same_value(a, b) is same and same_value(b, a) is same


def test_same_value_with_an_odd_eq_or_deep_nesting_is_identity():
    odd = _NoTruth()
    assert same_value(odd, odd) and not same_value(odd, _NoTruth())
    deep_a, deep_b = [], []
    for _ in range(5000):
        deep_a, deep_b = [deep_a], [deep_b]
    assert same_value(deep_a, deep_a) and not same_value(deep_a, deep_b)


def test_same_value_reads_a_torch_dtype_by_name():
    torch = pytest.importorskip("torch")
    assert same_value(torch.bfloat16, "bfloat16") and not same_value(torch.float16, "bfloat16")


# ---- one optimizer reader ----------------------------------------------------------------------------------
@dataclasses.dataclass
class _Optimizer:
    optimizer: str = "adam"
    bf16: bool = True


class _GetNode:  # an OmegaConf-like node: .get() and attributes
    def __init__(self, **values):
        self._values = values

    def get(self, name, default=None):
        return self._values.get(name, default)


@pytest.mark.parametrize("obj", [{"optimizer": "adam", "bf16": True}, _Optimizer(),
                                 SimpleNamespace(optimizer="adam", bf16=True), _GetNode(optimizer="adam", bf16=True)],
                         ids=["mapping", "dataclass", "attributes", "get"])
def test_reader_reads_every_kind_of_optimizer_config(obj):
    reader = OptimizerReader(obj)
    assert reader.present and reader.get("optimizer") == "adam" and reader.get("bf16") is True
    assert reader.get("lr", 7) == 7
    side = reader.side(["optimizer", "bf16", "lr"], {"lr": 0.1, "bf16": False})
    assert side.values == {"optimizer": "adam", "bf16": True, "lr": 0.1}
    assert side.given == {"optimizer", "bf16"} and not side.settable
    assert side.built is not isinstance(obj, dict)


def test_reader_of_a_resolution_reads_only_what_its_build_has():
    opt = compat.resolve({"optimizer": "adam", "bf16": True}, config="optimizer", version="0.19.2")
    reader = OptimizerReader.of_fields(opt.fields)
    absent = next(n for n, f in opt.fields.items() if f.target_name is None)
    assert reader.get("optimizer") == "adam" and reader.get(absent, "missing") == "missing"
    side = reader.side(())
    assert "optimizer" in side.given and side.has("optimizer") and not side.has(absent)


def test_no_optimizer_reads_nothing():
    reader = OptimizerReader(None)
    assert not reader.present and reader.get("optimizer", "x") == "x"
    with pytest.raises(compat.FieldTypeError, match="optimizer_config"):
        OptimizerReader("adam")
