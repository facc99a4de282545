"""What a test run includes, from the environment: CI (CI=true, as GitHub Actions sets it) runs every test with the
full hypothesis profile and fails a `network` test whose index is unreachable; a local run skips the `slow` tests
(MCORE_COMPAT_SLOW=1 runs them) and uses the quick hypothesis profile (HYPOTHESIS_PROFILE overrides either way)."""
from __future__ import annotations

import os
from collections.abc import Mapping

SLOW_ENV = "MCORE_COMPAT_SLOW"


def in_ci(env: Mapping[str, str] = os.environ) -> bool:
    return env.get("CI", "").strip().lower() in ("true", "1", "yes")


def runs_slow_tests(env: Mapping[str, str] = os.environ) -> bool:
    return in_ci(env) or env.get(SLOW_ENV, "").strip() == "1"


def hypothesis_profile(env: Mapping[str, str] = os.environ) -> str:
    return env.get("HYPOTHESIS_PROFILE") or ("full" if in_ci(env) else "quick")


SLOW_SKIP_REASON = (f"slow: runs in CI (CI=true) and with {SLOW_ENV}=1, skipped in a local run "
                    "(see tests/run_policy.py)")
