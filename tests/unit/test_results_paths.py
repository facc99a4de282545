"""A normal lane or smoke run writes only where git ignores it; `--record` writes the tracked results."""
from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

from tools.lane_common import load_script  # noqa: E402
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


def _lane(path: str):
    """tests/ckpt/lane.py or tests/equiv/lane.py, loaded under a name of its own (both are scripts named lane)."""
    return load_script(path, f"lane_{Path(path).parent.name}")


@pytest.mark.parametrize("path, argv", [
    ("tests/ckpt/lane.py", ["pair", "--old", "0.18.2", "--new", "0.19.2", "--old-python", "p", "--new-python", "p"]),
    ("tests/equiv/lane.py", ["compare", "--require-all"]),  # the noxfile's equiv session runs exactly this
])
def test_a_lane_records_the_tracked_results_only_when_asked(path, argv):
    parser = _lane(path).parser()
    assert parser.parse_args(argv).record is False
    assert parser.parse_args([*argv, "--record"]).record is True


def test_the_checkpoint_lane_writes_its_table_and_timing_only_into_the_directory_it_is_given(tmp_path):
    lane = _lane("tests/ckpt/lane.py")
    row = {"pair": "0.18.2->0.19.2", "old": "0.18.2", "new": "0.19.2", "variants": {}}
    lane.record(row, {"old": "0.18.2", "new": "0.19.2", "loadavg": "0 0 0"}, "gloo", str(tmp_path / "out"))
    assert sorted(p.name for p in tmp_path.rglob("*") if p.is_file()) == [
        "ckpt_lane.json", "ckpt_lane.md", "ckpt_lane_time.json"]
