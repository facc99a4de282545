"""ruff (E, F, UP, B, I; configured in pyproject.toml) is clean over every tracked Python file. The unit session
installs ruff with the test extra; a checkout without it skips, CI fails."""
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from run_policy import in_ci

ROOT = Path(__file__).resolve().parents[2]


def _ruff() -> str | None:
    beside = Path(sys.executable).with_name("ruff")
    return str(beside) if beside.is_file() else shutil.which("ruff")


def test_ruff_finds_nothing():
    ruff = _ruff()
    if ruff is None:
        if in_ci():
            pytest.fail("ruff is not installed: the test extra pins it (pyproject.toml)")
        pytest.skip("ruff is not installed (python3 -m pip install ruff); CI runs this")
    proc = subprocess.run([ruff, "check", "--no-cache", "--output-format", "concise", str(ROOT)], cwd=ROOT,
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]
