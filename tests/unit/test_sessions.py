"""The nox sessions' test selections (noxfile.SELECTION) cover every test, and the CPU sessions run each once:
registry-only tests in `unit`, megatron-marked tests in every `mcore-<version>`, gpu tests in `gpu-<version>`."""
from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

from run_policy import hypothesis_profile, runs_slow_tests

ROOT = Path(__file__).resolve().parents[2]


def selections() -> dict[str, list[str]]:
    """SELECTION from noxfile.py, read with ast (importing the noxfile needs nox)."""
    tree = ast.parse((ROOT / "noxfile.py").read_text(encoding="utf-8"))
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(getattr(t, "id", None) == "SELECTION" for t in node.targets):
            return ast.literal_eval(node.value)
    raise AssertionError("noxfile.py defines no SELECTION")


# One process collects every selection: pytest.main() called again in the same process reuses the imported test
# modules, so four selections cost about one collection (four `pytest --collect-only` processes took ~25 s of CPU).
_COLLECT_ALL = """
import json, sys
import pytest

class Items:
    def pytest_collection_finish(self, session):
        self.ids = [item.nodeid for item in session.items]

found = {}
for name, args in json.loads(sys.argv[2]).items():
    items = Items()
    code = pytest.main(["--collect-only", "-q", "-p", "no:cacheprovider", "-p", "no:xdist", *args], plugins=[items])
    if code not in (0, 5):
        sys.exit(f"pytest --collect-only {' '.join(args)}: exit code {code}")
    found[name] = getattr(items, "ids", [])
with open(sys.argv[1], "w", encoding="utf-8") as fh:
    json.dump(found, fh)
"""


def collect_all(selections: dict[str, list[str]], tmp_path: Path) -> dict[str, set[str]]:
    out = tmp_path / "collected.json"
    proc = subprocess.run([sys.executable, "-c", _COLLECT_ALL, str(out), json.dumps(selections)], cwd=ROOT,
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    return {name: set(ids) for name, ids in json.loads(out.read_text(encoding="utf-8")).items()}


def test_every_test_runs_somewhere_and_cpu_sessions_run_each_once(tmp_path):
    chosen = collect_all({**selections(), "everything": ["tests"], "slow": ["tests", "-m", "slow"]}, tmp_path)
    everything, slow = chosen.pop("everything"), chosen.pop("slow")
    assert len(everything) > 300
    assert slow and slow <= everything  # slow tests are skipped only outside CI (the test below), so CI runs them
    assert set().union(*chosen.values()) == everything, "tests no session runs"
    assert not chosen["unit"] & chosen["pin"], "tests that every pin session would repeat"
    in_megatron_dirs = {t for t in everything if t.startswith(("tests/contract/", "tests/integration/"))}
    assert in_megatron_dirs and not chosen["unit"] & in_megatron_dirs
    assert in_megatron_dirs - chosen["gpu"] <= chosen["pin"]


def test_ci_runs_the_slow_tests_and_the_full_hypothesis_profile_a_local_run_skips_them():
    assert runs_slow_tests({"CI": "true"}) and hypothesis_profile({"CI": "true"}) == "full"
    assert not runs_slow_tests({}) and hypothesis_profile({}) == "quick"
    assert not runs_slow_tests({"CI": "false"}) and runs_slow_tests({"MCORE_COMPAT_SLOW": "1"})
    assert hypothesis_profile({"CI": "true", "HYPOTHESIS_PROFILE": "quick"}) == "quick"
