"""Start slow, independent work at the end of collection: a selected test module that defines
``start_early(config)`` gets it called once, before any test runs.

The gloo DDP test uses it to start its ranks, forked after this process imported megatron (tests/conftest.py),
so that they inherit that import and run beside the contract tests instead of after them.
Not under xdist (every worker collects every module, so each would start the work) and not for a
collect-only run or skipped tests (no megatron-core installed).
"""
from __future__ import annotations

import os

import pytest


@pytest.hookimpl(trylast=True)  # after tests/conftest.py imported megatron here: the ranks fork with it loaded
def pytest_collection_finish(session):
    if session.config.option.collectonly or os.environ.get("PYTEST_XDIST_WORKER"):
        return
    started = set()
    for item in session.items:
        module = getattr(item, "module", None)
        start = getattr(module, "start_early", None)
        if start is None or module in started or item.get_closest_marker("skip"):
            continue
        started.add(module)
        start(session.config)
