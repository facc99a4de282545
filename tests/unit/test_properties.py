"""Nothing a user sets is lost: over every registry version and generated override dicts (canonical names,
aliases, wrong types, unknown keys), each non-default value reaches the kwargs under the version's name, or a
CompatError names it. The same holds for what ``explain`` reports."""
import warnings

from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from compat import CompatError, resolve
from compat.canonical import canonical
from compat.registry import registry

REG = registry()
CANON = canonical(REG)
VERSIONS = REG.versions()
ALIASES = sorted(CANON.renames)

_VALID = {
    "bool": st.booleans(),
    "int": st.integers(min_value=1, max_value=10**9),
    "float": st.floats(allow_nan=False, allow_infinity=False),
    "dtype": st.sampled_from(["fp32", "bf16", "float16", "torch.bfloat16", "float32"]),
    "str_tuple": st.lists(st.sampled_from(["router", "bias", "norm"]), max_size=2).map(tuple),
}
_WRONG = st.one_of(st.text(max_size=4), st.integers(-5, 5), st.none(), st.booleans(), st.floats(allow_nan=False))


def _valid_for(name: str):
    kind, optional = CANON.fields[name].kind
    rule = CANON.value_rules.get(name, {})
    valid = st.sampled_from(rule["choices"]) if "choices" in rule else _VALID.get(kind, st.text(max_size=5))
    return st.one_of(st.none(), valid) if optional else valid


def _own_names(version: str) -> list[str]:
    return sorted(n for n in REG.schema(version).names if n in CANON.fields)


@st.composite
def overrides_for(draw, version: str) -> dict:
    """Mostly valid values for the version's own fields, with some of everything that can go wrong."""
    out = {}
    for _ in range(draw(st.integers(0, 6))):
        kind = draw(st.sampled_from(["own"] * 14 + ["any"] * 2 + ["alias"] * 2 + ["wrong", "unknown"]))
        if kind == "own":
            name = draw(st.sampled_from(_own_names(version)))
            out[name] = draw(_valid_for(name))
        elif kind == "any":
            name = draw(st.sampled_from(sorted(CANON.fields)))
            out[name] = draw(_valid_for(name))
        elif kind == "alias":
            out[draw(st.sampled_from(ALIASES))] = draw(st.booleans())
        elif kind == "wrong":
            out[draw(st.sampled_from(sorted(CANON.fields)))] = draw(_WRONG)
        else:
            out[draw(st.sampled_from(sorted(CANON.fields))) + "_x"] = True
    return out


cases = st.sampled_from(VERSIONS).flatmap(lambda v: st.tuples(st.just(v), overrides_for(v)))
optimizer_st = st.one_of(st.none(), st.fixed_dictionaries({
    "optimizer": st.sampled_from(["adam", "sgd", "muon"]),
    "use_precision_aware_optimizer": st.booleans(),
    "main_grads_dtype": st.sampled_from(["fp32", "bf16", "fp16"]),
    "use_layer_wise_distributed_optimizer": st.booleans(),
}))


def _canonical_of(key: str) -> str:
    return CANON.renames[key]["new"] if key in CANON.renames else key


@settings(suppress_health_check=[HealthCheck.too_slow])
@given(case=cases, optimizer=optimizer_st, lenient=st.booleans())
def test_nothing_a_user_sets_is_lost(case, optimizer, lenient):
    version, overrides = case
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            res = resolve(overrides, optimizer, version, lenient=lenient)
    except CompatError as exc:
        event(f"error: {type(exc).__name__}")
        named = {k for k in overrides} | {_canonical_of(k) for k in overrides} | {
            "use_layer_wise_param_layout", "optimizer_config.main_grads_dtype"}
        assert any(n in str(exc) for n in named), (exc, overrides)
        return
    event(f"resolved, {len(res.kwargs)} kwargs")
    for key, raw in overrides.items():
        name = _canonical_of(key)
        field = res.fields[name]  # explain lists every user key
        assert key in field.given_as, (key, field)
        if field.source == "dropped: lenient":
            assert lenient and field in res.dropped and any(name in w for w in res.warnings)
            continue
        if field.source == "dropped: equals implied default":
            assert field.value == CANON.fields[name].default and field in res.dropped
            continue
        assert field.source == "user"
        assert field.target_name in res.kwargs, (key, field, res.kwargs)
        assert field.target_name in REG.schema(version).names
        sent = res.kwargs[field.target_name]
        if field.target_name == key and CANON.fields.get(key) and CANON.fields[key].kind[0] in ("bool", "int", "str"):
            assert sent == raw and type(sent) is type(raw)
        if field.target_name != name:
            assert sent == CANON.to_old(name, field.value)


@given(case=cases)
def test_explain_json_lists_every_user_key(case):
    version, overrides = case
    try:
        out = resolve(overrides, None, version).to_dict()
    except CompatError:
        return
    for key in overrides:
        assert key in out["fields"][_canonical_of(key)]["given_as"]
