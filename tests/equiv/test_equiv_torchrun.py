"""The torchrun path on CPU, for real: gloo ranks started by `torchrun --standalone --nproc_per_node=2`.

Runs in the `equiv` session (a lane venv: torch + megatron-core); the `unit` session has neither and skips here.
1. The DDP harness's tests under torchrun, each pytest process a rank (as Megatron-LM runs its unit tests).
2. The equivalence worker under torchrun gives the same bits as with forked ranks (the forked record of the
   `equiv-<version>` session that ran before, when the work dir has it; else a forked run here).
3. The checkpoint lane's worker under torchrun: save and load the plain optimizer, every byte exact.
"""
from __future__ import annotations

import importlib.util
import json
import os
import re
import subprocess
import sys

import pytest

from tools.lane_common import load_script, worker_env

HERE = os.path.dirname(os.path.abspath(__file__))
REPO_ROOT = os.path.dirname(os.path.dirname(HERE))

NEEDS = "needs torch and megatron-core: runs in the `equiv` session (nox -s equiv), not in `unit`"
pytestmark = pytest.mark.skipif(importlib.util.find_spec("torch") is None
                                or importlib.util.find_spec("megatron") is None, reason=NEEDS)
TIMEOUT = 600


def _env(**extra) -> dict:
    env = {k: v for k, v in os.environ.items() if k not in ("RANK", "WORLD_SIZE", "LOCAL_RANK", "MASTER_ADDR",
                                                            "MASTER_PORT", "PYTEST_XDIST_WORKER")}
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    return worker_env({**env, "OMP_NUM_THREADS": "1", **extra})  # the workers' PYTHONPATH, and tools/ for lane.py


def test_ddp_harness_tests_pass_on_every_torchrun_rank():
    cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node=2", "-m", "pytest",
           "tests/integration/test_ddp_gloo.py", "-q", "-p", "no:cacheprovider", "-W", "ignore"]
    proc = subprocess.run(cmd, cwd=REPO_ROOT, capture_output=True, text=True, timeout=TIMEOUT, env=_env())
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out[-4000:]
    summaries = re.findall(r"(\d+) passed, 1 skipped", out)
    assert len(summaries) == 2, f"expected one pytest summary per rank:\n{out[-3000:]}"
    assert all(int(n) > 20 for n in summaries)


def _lane():
    return load_script("tests/equiv/lane.py", "equiv_lane")


def _pin_record(work, *launcher_args) -> dict:
    from compat.version import installed_version

    version = installed_version()
    cmd = [sys.executable, os.path.join(HERE, "lane.py"), "pin", "--version", version, "--python", sys.executable,
           *launcher_args]
    proc = subprocess.run(cmd, cwd=REPO_ROOT, capture_output=True, text=True, timeout=TIMEOUT,
                          env=_env(MCORE_COMPAT_EQUIV_WORK=str(work)))
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-4000:]
    with open(os.path.join(work, version, "record.json"), encoding="utf-8") as fh:
        return json.load(fh)


def test_equivalence_worker_under_torchrun_gives_the_forked_bits(tmp_path):
    from compat.version import installed_version

    lane = _lane()
    torchrun = _pin_record(tmp_path / "torchrun", "--torchrun")
    assert torchrun["launcher"] == "torchrun"
    assert {r["init_method"] for r in torchrun["ranks"]} == {"env"}
    session = lane._read_json(os.path.join(lane.work_dir(), installed_version(), "record.json"))
    same_plan = session is not None and session["plan"] == torchrun["plan"] and session["launcher"] == "fork"
    forked = session if same_plan else _pin_record(tmp_path / "fork")
    assert {r["init_method"] for r in forked["ranks"]} == {"file"}
    for vid in lane.variant_ids():
        a, b = forked["variants"][vid], torchrun["variants"][vid]
        assert len(a["steps"]) == forked["plan"]["steps"] > 0
        assert lane.diffs.first_difference(a, b) is None, lane.diffs.describe(lane.diffs.first_difference(a, b))
        assert a["memory"] == b["memory"]


def _ckpt_side(tmp_path, side, *extra) -> dict:
    worker = os.path.join(REPO_ROOT, "tests", "ckpt", "worker.py")
    out, ranks = str(tmp_path / f"{side}.json"), str(tmp_path / f"{side}-ranks")
    common = [side, "--ckpt", str(tmp_path / "ckpt"), "--out", out, *extra]
    proc = subprocess.run([sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node=2",
                           worker, *common, "--rank-dir", ranks], cwd=REPO_ROOT, capture_output=True, text=True,
                          timeout=TIMEOUT, env=_env())
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-4000:]
    subprocess.run([sys.executable, worker, *common, "--collect", ranks], check=True, timeout=120, env=_env())
    with open(out, encoding="utf-8") as fh:
        return json.load(fh)


def test_checkpoint_worker_under_torchrun_saves_and_loads_exactly(tmp_path):
    ckpt_lane = load_script("tests/ckpt/lane.py", "ckpt_lane")
    save = _ckpt_side(tmp_path, "save", "--only", "plain")
    assert save["launcher"] == "torchrun" and [p["id"] for p in save["plan"]] == ["plain"]
    with open(tmp_path / "plan.json", "w", encoding="utf-8") as fh:
        json.dump({"plan": save["plan"]}, fh)
    load = _ckpt_side(tmp_path, "load", "--plan", str(tmp_path / "plan.json"))
    verdict = ckpt_lane.evaluate("plain", save, load, str(tmp_path))
    assert verdict["result"] == "exact", verdict
    assert verdict["checks"]["fresh_differs"] and verdict["checks"]["entries"] > 0
