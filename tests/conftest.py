import importlib.util
import os

import pytest
from hypothesis import HealthCheck, settings

settings.register_profile("full", max_examples=3000, deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.register_profile("quick", max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "full"))


def megatron_installed() -> bool:
    """Checked without importing megatron or torch in the pytest parent."""
    return importlib.util.find_spec("megatron") is not None and importlib.util.find_spec("megatron.core") is not None


requires_megatron = pytest.mark.skipif(not megatron_installed(), reason="megatron-core is not installed in this session")
