"""Configs built the way Megatron-LM builds them, from real launch scripts, on pins that ship megatron.training.

Each script's arguments (``data/launch_args.json``: slime's model scripts as the development set, Megatron-LM's
own examples and Pai-Megatron-Patch as the evaluation set) go through Megatron's parser with its defaults,
``validate_args`` and ``core_transformer_config_from_args``; the kwargs it would pass to the config class go through
compat, from the registry and on the live class. compat refuses none that the real class accepts (on this CPU
host the real class also refuses what needs Transformer Engine; those say nothing about compat), and every
refusal is a typed error.
"""
import warnings

import pytest
from argparse_cases import LAUNCH, config_kwargs_from_args, has_training
from label_cases import compat_outcomes, documented, real_class, real_outcome

from compat import version as v
from compat.errors import CompatError

pytestmark = pytest.mark.megatron


@pytest.mark.parametrize("split", ["dev", "eval"])
def test_argparse_built_configs_are_not_falsely_refused(split):
    if not has_training():
        pytest.skip(f"megatron-core {v.installed_version()} ships no megatron.training (0.17.0+ does)")
    installed = v.installed_version()
    built, false_refusals = 0, []
    for script in (s for s in LAUNCH["scripts"] if s["set"] == split):
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                config, kwargs = config_kwargs_from_args(script["args"])
        except (Exception, SystemExit):  # Megatron's own parser or validate_args refuses the script here
            continue
        built += 1
        real = real_outcome(real_class(config), kwargs)
        for path, error in compat_outcomes(config, kwargs, installed).items():
            if error is None:
                continue
            assert isinstance(error, CompatError)
            if real is None and documented(error) is None:
                false_refusals.append(f"{script['project']} {script['file']} ({path}): {error}")
    if not built:
        pytest.skip(f"no {split} script builds kwargs on megatron-core {installed}")
    assert not false_refusals, "\n".join(false_refusals)
