"""Nothing a user sets is lost: over every config class, every registry release and generated override dicts
(canonical names, aliases, wrong types, unknown keys, and None/False/0/empty values and bools for ints, which the
type policy accepts where the release reads them as meant), each non-default value reaches the kwargs under the
release's name, or is re-spelled with a note saying so, or a CompatError names it. The same holds for what
``explain`` reports."""
import warnings
from functools import cache

from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from compat import CompatError, ConstraintError, resolve
from compat.canonical import canonical
from compat.registry import registry

REG = registry()
CONFIGS = ["ddp", "optimizer", "adam_optimizer", "sgd_optimizer", "transformer", "mla"]
CANON = {c: canonical(REG, None, config=c) for c in CONFIGS}
VERSIONS = {c: REG.versions_having(c) for c in CONFIGS}

_VALID = {
    "bool": st.booleans(),
    "int": st.integers(min_value=1, max_value=10**9),
    "float": st.floats(allow_nan=False, allow_infinity=False),
    "dtype": st.sampled_from(["fp32", "bf16", "float16", "torch.bfloat16", "float32"]),
    "str_tuple": st.lists(st.sampled_from(["router", "bias", "norm"]), max_size=2).map(tuple),
}
_WRONG = st.one_of(st.text(max_size=4), st.integers(-5, 5), st.none(), st.booleans(), st.floats(allow_nan=False))
_FALSY = st.sampled_from([None, False, 0, "", [], ()])


@cache
def _valid_for(config: str, name: str):
    spec = CANON[config].fields[name]
    kind, optional = spec.kind
    rule = CANON[config].value_rules.get(name, {})
    choices = rule.get("choices") or spec_choices(spec)
    valid = st.sampled_from(choices) if choices else _VALID.get(kind, st.text(max_size=5))
    return st.one_of(st.none(), valid) if optional else valid


def spec_choices(spec):
    from compat.annotations import type_of

    return list(type_of(spec.annotation).choices or [])


@cache
def _own_names(config: str, version: str):
    return st.sampled_from(sorted(n for n in REG.schema(version, config=config).names if n in CANON[config].fields))


@cache
def _any_name(config: str):
    return st.sampled_from(sorted(CANON[config].fields))


@cache
def _alias(config: str):
    return st.sampled_from(sorted(CANON[config].renames))


@st.composite
def overrides_for(draw, config: str, version: str) -> dict:
    """Mostly valid values for the release's own fields, with some of everything that can go wrong."""
    canon = CANON[config]
    out = {}
    for _ in range(draw(st.integers(0, 6))):
        kind = draw(st.sampled_from(["own"] * 14 + ["any"] * 2 + ["alias"] * 2 + ["falsy"] * 3 + ["wrong", "unknown"]))
        if kind == "own":
            name = draw(_own_names(config, version))
            out[name] = draw(_valid_for(config, name))
        elif kind == "any":
            name = draw(_any_name(config))
            out[name] = draw(_valid_for(config, name))
        elif kind == "alias" and canon.renames:
            out[draw(_alias(config))] = draw(st.one_of(st.booleans(), st.integers(1, 4)))
        elif kind == "falsy":
            name = draw(_own_names(config, version))
            out[name] = draw(st.one_of(_FALSY, st.booleans()) if canon.fields[name].kind[0] == "int" else _FALSY)
        elif kind == "wrong":
            out[draw(_any_name(config))] = draw(_WRONG)
        else:
            out[draw(_any_name(config)) + "_x"] = True
    return out


cases = st.sampled_from(CONFIGS).flatmap(lambda c: st.sampled_from(VERSIONS[c]).flatmap(
    lambda v: st.tuples(st.just(c), st.just(v), overrides_for(c, v))))
optimizer_st = st.one_of(st.none(), st.fixed_dictionaries({
    "optimizer": st.sampled_from(["adam", "sgd", "muon"]),
    "use_precision_aware_optimizer": st.booleans(),
    "main_grads_dtype": st.sampled_from(["fp32", "bf16", "fp16"]),
    "use_layer_wise_distributed_optimizer": st.booleans(),
}))


def _canonical_of(config: str, key: str) -> str:
    canon = CANON[config]
    return canon.renames[key]["new"] if key in canon.renames else key


@settings(suppress_health_check=[HealthCheck.too_slow])
@given(case=cases, optimizer=optimizer_st, lenient=st.booleans())
def test_nothing_a_user_sets_is_lost(case, optimizer, lenient):
    config, version, overrides = case
    canon = CANON[config]
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            res = resolve(overrides, optimizer if config == "ddp" else None, version, config=config, lenient=lenient)
    except CompatError as exc:
        event(f"{config} error: {type(exc).__name__}")
        named = {k for k in overrides} | {_canonical_of(config, k) for k in overrides} | {
            "use_layer_wise_param_layout", "optimizer_config.main_grads_dtype"}
        if isinstance(exc, ConstraintError):  # a check names the fields it read, by the release's names
            named |= {canon.renamed_to[n]["old"] for n in named if n in canon.renamed_to}
        assert any(n in str(exc) for n in named), (exc, overrides)
        return
    event(f"{config} resolved")
    schema = REG.schema(version, config=config)
    for key, raw in overrides.items():
        name = _canonical_of(config, key)
        field = res.fields[name]  # explain lists every user key
        assert key in field.given_as, (key, field)
        if field.source == "dropped: lenient":
            assert lenient and field in res.dropped and any(name in w for w in res.warnings)
            continue
        if field.source == "dropped: equals implied default":
            implied = canon.implied(name, version)[0]
            assert (field.value == implied or canon.equivalent(name, field.value, implied)) and field in res.dropped
            continue
        if field.source == "coerced":  # lenient: a value the class would override, dropped with a warning
            assert lenient and field.note in res.warnings and name in field.note, (key, field)
            continue
        assert field.source == "user"
        assert field.target_name in res.kwargs, (key, field, res.kwargs)
        assert field.target_name in schema.names
        sent = res.kwargs[field.target_name]
        if raw is False and sent is None and key == field.target_name:  # a flag-like field's False, as None
            assert field.note and "sent as None" in field.note and field.note in res.warnings, field
            continue
        if field.note:  # a value alias: the target's spelling, said in explain's notes
            assert "sent as" in field.note and field.note in res.warnings, field
            continue
        if field.target_name == key and canon.fields.get(key) and canon.fields[key].kind[0] in ("bool", "int", "str"):
            assert sent == raw and type(sent) is type(raw)
        if field.target_name != name:
            assert sent == canon.to_old(name, field.value)


@given(case=cases)
def test_explain_json_lists_every_user_key(case):
    config, version, overrides = case
    try:
        out = resolve(overrides, None, version, config=config).to_dict()
    except CompatError:
        return
    for key in overrides:
        assert key in out["fields"][_canonical_of(config, key)]["given_as"]
