"""The nox sessions' test selections (noxfile.SELECTION) cover every test, and the CPU sessions run each once:
registry-only tests in `unit`, megatron-marked tests in every `mcore-<version>`, gpu tests in `gpu-<version>`."""
from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from run_policy import hypothesis_profile, runs_slow_tests

ROOT = Path(__file__).resolve().parents[2]


def selections() -> dict[str, list[str]]:
    """SELECTION from noxfile.py, read with ast (importing the noxfile needs nox)."""
    tree = ast.parse((ROOT / "noxfile.py").read_text(encoding="utf-8"))
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(getattr(t, "id", None) == "SELECTION" for t in node.targets):
            return ast.literal_eval(node.value)
    raise AssertionError("noxfile.py defines no SELECTION")


class _Collected:
    def pytest_collection_finish(self, session):
        self.ids = [item.nodeid for item in session.items]


def collect_all(selections: dict[str, list[str]], monkeypatch) -> dict[str, set[str]]:
    """Each selection's test ids, collected by pytest.main in this process: the test modules are imported already
    (this run collected them), so the five selections cost five walks, not a fresh interpreter's imports and
    collection (a child took ~2 s of CPU; four `pytest --collect-only` processes ~25 s)."""
    monkeypatch.chdir(ROOT)
    found = {}
    for name, args in selections.items():
        items = _Collected()
        code = pytest.main(["--collect-only", "-q", "-p", "no:cacheprovider", "-p", "no:xdist", *args],
                           plugins=[items])
        assert code in (0, 5), f"pytest --collect-only {' '.join(args)}: exit code {code}"
        found[name] = set(getattr(items, "ids", []))
    return found


def test_every_test_runs_somewhere_and_cpu_sessions_run_each_once(monkeypatch):
    chosen = collect_all({**selections(), "everything": ["tests"], "slow": ["tests", "-m", "slow"]}, monkeypatch)
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


def test_no_test_fixes_its_own_hypothesis_example_count():
    """max_examples comes from the profile (quick locally, full in CI): a test that passes its own ignores both."""
    given = re.compile(r"\bmax_examples\s*=")
    fixed = [str(p.relative_to(ROOT)) for p in sorted((ROOT / "tests").rglob("*.py"))
             if p.name != "conftest.py" and given.search(p.read_text(encoding="utf-8"))]
    assert fixed == [], f"max_examples given outside tests/conftest.py's profiles: {fixed}"
