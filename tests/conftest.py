import functools
import gc
import importlib.util
import os
import sys
import urllib.request
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings
from run_policy import SLOW_SKIP_REASON, hypothesis_profile, in_ci, runs_slow_tests  # tests/: this file's folder

# The checkout's tools/ package (matrix, smoke, layout, ...) for every test, whatever the runner put on sys.path:
# appended, so `import compat` still finds the installed package first where one is installed. The one sys.path edit
# of the checkout (tests/unit/test_repo_hygiene.py). Not pytest's `pythonpath` ini option: it prepends, and pytest 9
# applies it before loading the pytest11 plugins, so in the unit session (a real wheel, PYTHONSAFEPATH) the entry
# point compat.tooling.pytest_gloo and every test would import ./compat instead of the installed package
# (tests/unit/test_installed_package.py). A dependency group installs no tools/ (it is in no wheel).
_ROOT = str(Path(__file__).resolve().parents[1])
if _ROOT not in sys.path:
    sys.path.append(_ROOT)

settings.register_profile("full", max_examples=3000, deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.register_profile("quick", max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile(hypothesis_profile())

UNMARKED_INDEX = "http://127.0.0.1:9/not-a-network-test"  # nothing listens on port 9: a download fails at once


@pytest.fixture(autouse=True)
def _index_only_for_network_tests(request, monkeypatch, tmp_path_factory):
    """A test that needs the package index must be marked ``network``. Every other test sees an empty download
    cache and an index that refuses connections, so an unmarked download fails here instead of passing on a
    warm ~/.cache (subprocesses inherit the environment)."""
    if request.node.get_closest_marker("network") is None:
        monkeypatch.setenv("MCORE_COMPAT_INDEX_URL", UNMARKED_INDEX)
        monkeypatch.setenv("MCORE_COMPAT_CACHE", str(tmp_path_factory.mktemp("empty-cache")))
        monkeypatch.setenv("MCORE_COMPAT_STATE", str(tmp_path_factory.mktemp("state")))  # the surface cache's key
        return
    problem = _index_unreachable()
    if problem:
        if in_ci():
            pytest.fail(f"network test in CI (CI=true), but the package index is unreachable: {problem}")
        pytest.skip(f"the package index is unreachable ({problem}); in CI (CI=true) this fails")


@functools.cache
def _index_unreachable() -> str | None:
    """Why megatron-core's listing on the configured index cannot be read (None: it can), asked once per process."""
    from compat.tooling.fetch import index_url, redact

    url = f"{index_url()}/megatron-core/"
    try:
        with urllib.request.urlopen(url, timeout=10) as response:
            response.read(1)
    except (OSError, ValueError) as exc:
        return f"{redact(url)}: {type(exc).__name__}: {exc}"
    return None


def megatron_core_installed() -> bool:
    """True if torch and megatron.core are importable; checked without importing either."""
    if importlib.util.find_spec("torch") is None or importlib.util.find_spec("megatron") is None:
        return False
    locations = importlib.util.find_spec("megatron").submodule_search_locations or []
    return any(os.path.isdir(os.path.join(loc, "core")) for loc in locations)


def _import_megatron_or_fail(expected: str) -> None:
    """A pin session fails here, with the reason, when its recipe gives a megatron-core that does not import
    (the contract tests import it in this process anyway, so this costs nothing extra)."""
    try:
        import megatron.core.distributed  # noqa: F401
    except Exception as exc:  # any import-time failure of the recipe (missing module, pkg_resources, triton)
        raise pytest.UsageError(f"megatron-core {expected} is installed but `import megatron.core.distributed` "
                                f"fails: {type(exc).__name__}: {exc}") from None


def pytest_report_header(config):
    """Which megatron-core and torch this run sees (from distribution metadata: nothing is imported)."""
    import importlib.metadata

    found = []
    for dist in ("megatron-core", "torch"):
        try:
            found.append(f"{dist} {importlib.metadata.version(dist)}")
        except importlib.metadata.PackageNotFoundError:
            found.append(f"{dist} not installed")
    return ", ".join(found)


@pytest.hookimpl(tryfirst=True)  # before tests/integration/conftest.py starts the DDP ranks: they fork from here
def pytest_collection_finish(session):
    expected = os.environ.get("MCORE_COMPAT_EXPECT_MEGATRON")
    if expected and any("megatron" in item.keywords for item in session.items):
        _import_megatron_or_fail(expected)
    # What collection imported lives to the end of the run: out of the cyclic collector's reach, its full passes
    # no longer walk every test module, item and registry again (a serial unit run spent 6.8 of 41 CPU s in GC).
    gc.freeze()


def pytest_collection_modifyitems(config, items):
    if not runs_slow_tests():
        skip_slow = pytest.mark.skip(reason=SLOW_SKIP_REASON)
        for item in items:
            if "slow" in item.keywords:
                item.add_marker(skip_slow)
    expected = os.environ.get("MCORE_COMPAT_EXPECT_MEGATRON")  # set by the nox pin sessions
    if megatron_core_installed():
        if expected:
            from compat.version import installed_version, parse

            found = installed_version()
            if found is None or parse(found) != parse(expected):
                raise pytest.UsageError(f"this session pins megatron-core {expected} but {found} is installed")
        return
    if expected:
        raise pytest.UsageError(f"this session pins megatron-core {expected} but it is not importable")
    skip = pytest.mark.skip(reason="megatron-core (and torch) not installed: contract and real-DDP tests need them")
    for item in items:
        if "megatron" in item.keywords:
            item.add_marker(skip)
