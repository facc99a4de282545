"""A normal lane or smoke run writes only where git ignores it; `--record` writes the tracked results."""
from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from tools.results import RECORDED, UNRECORDED, results_dir_for  # noqa: E402
WRITTEN = ["ckpt_lane.json", "ckpt_lane.md", "ckpt_lane_time.json", "ckpt_lane_nccl_time.json",
           "equivalence.json", "equivalence.md", "smoke/0.16.1.json"]


def _ignored(path) -> bool:
    proc = subprocess.run(["git", "-C", str(ROOT), "check-ignore", "-q", "--no-index", str(path)], timeout=60)
    assert proc.returncode in (0, 1), proc
    return proc.returncode == 0


@pytest.mark.skipif(shutil.which("git") is None or not (ROOT / ".git").exists(), reason="needs git and a checkout")
def test_unrecorded_results_are_ignored_by_git_and_recorded_ones_are_not():
    assert results_dir_for(False) == UNRECORDED and results_dir_for(True) == RECORDED
    assert all(_ignored(UNRECORDED / name) for name in WRITTEN)
    assert not any(_ignored(RECORDED / name) for name in WRITTEN)
