"""Megatron-LM's own unit tests as labels, on the session's megatron-core.

Every constructor call of a config class in Megatron-LM's ``tests/unit_tests`` at four tags (extracted statically
by ``benchmarks/megatron_test_labels.py``) is built with the real class of this pin and passed through compat,
from the registry alone and on the live class. Every case the real class accepts must be accepted by compat, or
be a documented refusal (``data/documented_refusals.json``); so every case compat refuses, the real class
refuses too or it is documented. compat's refusals are typed errors naming the field.
"""
import pytest
from label_cases import LABELS, cases_for, compat_outcomes, decode_kwargs, documented, real_class, real_outcome

from compat import version as v
from compat.errors import CompatError

pytestmark = pytest.mark.megatron


@pytest.mark.parametrize("tag", sorted(LABELS["tags"]))
def test_what_the_real_class_accepts_compat_accepts(tag):
    installed = v.installed_version()
    false_refusals, checked = [], 0
    for case in cases_for(installed):
        if case["tag"] != tag:
            continue
        try:
            kwargs = decode_kwargs(case["kwargs"])
        except LookupError:  # an Enum member this build lacks: the real class cannot be called with it
            continue
        if real_outcome(real_class(case["config"]), kwargs) is not None:
            continue
        checked += 1
        for path, error in compat_outcomes(case["config"], kwargs, installed).items():
            if error is None or documented(error) is not None:
                continue
            assert isinstance(error, CompatError)
            false_refusals.append(f"{case['file']}:{case['line']} ({path}) {type(error).__name__}: {error}")
    if not checked:
        pytest.skip(f"no case of {tag} builds on megatron-core {installed}")
    assert not false_refusals, f"{len(false_refusals)} of {checked} accepted cases refused:\n" + \
        "\n".join(false_refusals[:40])
