"""Start slow, independent work at the end of collection: a selected test module that defines
``start_early(config)`` gets it called once, before any test runs.

The gloo DDP test uses it to spawn its ranks, so that their torch + megatron imports (the bulk of a pin
session) overlap this process's own megatron import and the contract tests instead of following them.
Not under xdist (every worker collects every module, so each would start the work) and not for a
collect-only run or skipped tests (no megatron-core installed).
"""
from __future__ import annotations

import os

import pytest


@pytest.hookimpl(tryfirst=True)  # before tests/conftest.py imports megatron in this process
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
