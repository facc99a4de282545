"""The unit session tests the package it installed (a real wheel of this checkout), not ./compat: in the test
process (an xdist worker), in a ``python -c`` child started from the checkout (the CLI tests' way), and in the
hostile catalogue's measured child. Outside the nox unit session (MCORE_COMPAT_EXPECT_WHEEL unset: a plain pytest in
a checkout) there is no wheel to expect, and the test skips."""
import os
import subprocess
import sys
from pathlib import Path

import pytest
from hostile_inputs import run_python

import compat

ROOT = Path(__file__).resolve().parents[2]
CHECKOUT_PACKAGE = ROOT / "compat"
pytestmark = pytest.mark.skipif(os.environ.get("MCORE_COMPAT_EXPECT_WHEEL") != "1",
                                reason="not the nox unit session (MCORE_COMPAT_EXPECT_WHEEL unset): no wheel installed")


def _from_checkout(path: str) -> bool:
    return Path(path).resolve().is_relative_to(CHECKOUT_PACKAGE)


def test_the_test_process_imports_the_installed_package():
    assert not _from_checkout(compat.__file__), f"compat imported from the checkout: {compat.__file__}"


def test_a_child_started_from_the_checkout_imports_the_installed_package():
    proc = subprocess.run([sys.executable, "-c", "import compat; print(compat.__file__)"], cwd=ROOT,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert not _from_checkout(proc.stdout.strip()), f"the child imported {proc.stdout.strip()}"


def test_the_hostile_catalogues_child_imports_the_installed_package():
    run = run_python("import compat; print(compat.__file__)")
    assert run.returncode == 0, run.stderr
    assert not _from_checkout(run.stdout.strip()), f"the child imported {run.stdout.strip()}"


def test_the_installed_version_is_the_one_the_package_says():
    # one version string: pyproject.toml reads compat.__version__ (a second copy there drifted once)
    from importlib.metadata import version

    assert version("mcore-compat") == compat.__version__
    assert 'dynamic = ["version"]' in (ROOT / "pyproject.toml").read_text()
