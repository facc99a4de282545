"""Harvested real configs (Megatron-Bridge recipes, NeMo-RL, verl) on the session's megatron-core.

``data/real_configs.json`` holds a few configs harvested by ``benchmarks/real_configs.py`` (the key/value data
only, with the file and line each value comes from) and, per pinned release, the outcome its real class gave:
built (with the value of every passed field on the object) or refused with a typed error. Here each config is
built again with ``compat.build_config`` on the live class: the outcome, the error's field, the kwargs' names and
every value on the object must be what was recorded, and the object must hold what the user gave.
"""
import enum
import json
import warnings
from pathlib import Path

import pytest

import compat
from compat import version as v

pytestmark = pytest.mark.megatron  # skipped by conftest.py where megatron-core is not installed

FIXTURE = json.loads((Path(__file__).parent / "data" / "real_configs.json").read_text())
CASES = FIXTURE["configs"]


@pytest.fixture(scope="module")
def installed():
    return v.installed_version()


def _live(values: dict) -> dict:
    """"torch.<dtype>" markers (a project passing a torch dtype) become the dtype, as the project passes it."""
    import torch

    return {k: getattr(torch, x.removeprefix("torch.")) if isinstance(x, str) and x.startswith("torch.") else x
            for k, x in values.items()}


def _shown(value):
    if type(value).__module__ == "torch" and type(value).__name__ == "dtype":
        return str(value)
    if isinstance(value, enum.Enum):
        return f"{type(value).__name__}.{value.name}"
    if isinstance(value, (list, tuple)):
        return [_shown(x) for x in value]
    return value


def _same_as_given(given, held) -> bool:
    """The object holds what the user gave: a dtype name as the dtype, a member name as the member."""
    shown = _shown(held)
    if isinstance(given, str) and isinstance(shown, str):
        return shown in (given, f"torch.{given}") or shown.endswith(f".{given}")
    if isinstance(given, (list, tuple)):
        return list(given) == shown
    numbers = {type(shown), type(given)} <= {int, float}
    return shown == given and (type(shown) is type(given) or numbers)


def _expected(case, installed):
    recorded = case["expected"].get(installed)
    if recorded is None:
        pytest.skip(f"no recorded outcome for megatron-core {installed}: run `python -m benchmarks.real_configs all`")
    return recorded


@pytest.mark.parametrize("case", CASES, ids=[c["id"] for c in CASES])
def test_harvested_config_builds_or_is_refused_as_recorded(case, installed):
    expected = _expected(case, installed)
    values = _live({**case["values"], **case["skeleton"]})
    if expected["outcome"] == "class_absent":  # 0.7.0's optimizer module imports Apex
        with pytest.raises(compat.MegatronNotInstalledError):
            compat.build_config(case["config"], values)
        return
    if expected["outcome"] == "refused":
        with pytest.raises(getattr(compat, expected["error"])) as exc:
            compat.build_config(case["config"], values)
        if "field" in expected:
            assert exc.value.field == expected["field"]
        else:
            assert expected["rule"] in str(exc.value)
        return
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        obj = compat.build_config(case["config"], values)
        res = compat.resolve(values, config=case["config"])
    assert sorted(res.kwargs) == sorted(expected["object"]), "the kwargs sent differ from the recorded build"
    for name, recorded in expected["object"].items():
        assert _shown(getattr(obj, name)) == recorded, name
    for name, given in case["values"].items():
        field = next(f for f in res.fields.values() if name in f.given_as)  # an old name is given as itself
        if field.target_name is None:
            assert field.name in expected["dropped"], f"{name} was dropped but not recorded as dropped"
            continue
        assert expected["renamed"].get(name, name) == field.target_name
        assert _same_as_given(given, getattr(obj, field.target_name)), (name, given)


@pytest.mark.parametrize("case", [c for c in CASES if c["wrapper_only"]],
                         ids=[c["id"] for c in CASES if c["wrapper_only"]])
def test_wrapper_only_keys_are_refused_not_dropped(case, installed):
    """The block as the project writes it, wrapper keys included: the API names the first key it does not know."""
    _expected(case, installed)
    block = {**case["wrapper_only"], **case["values"], **case["skeleton"]}  # wrapper keys first: named first
    with pytest.raises(compat.UnknownFieldError) as exc:
        compat.resolve(_live(block), config=case["config"])
    assert exc.value.field in case["wrapper_only"]
