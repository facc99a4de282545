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
        self.markers = {item.nodeid: {m.name for m in item.iter_markers()} for item in session.items}


def collect(args: list[str], monkeypatch) -> dict[str, set[str]]:
    """Each collected test id with its marker names, by pytest.main in this process (the test modules are imported
    already, so a collection costs one walk, not a fresh interpreter's imports: a child took ~2 s of CPU)."""
    monkeypatch.chdir(ROOT)
    items = _Collected()
    code = pytest.main(["--collect-only", "-q", "-p", "no:cacheprovider", "-p", "no:xdist", *args], plugins=[items])
    assert code in (0, 5), f"pytest --collect-only {' '.join(args)}: exit code {code}"
    return getattr(items, "markers", {})


class _Marks(dict):
    """Marker names as the names of a `-m` expression: a marker the test has is True, any other False."""

    def __init__(self, names: set[str]):
        super().__init__()
        self.names = names

    def __missing__(self, key: str) -> bool:
        return key in self.names


def selected(markers: dict[str, set[str]], args: list[str]) -> set[str]:
    """The ids a selection (["tests", "-m", EXPR]) picks from one collection of every test. `-m`'s grammar
    (names, not, and, or, parentheses) is Python's for booleans, so the expression is evaluated as one;
    test_one_collection_selects_what_pytest_selects checks that against pytest's own `-m`."""
    assert args[0] == "tests" and (len(args) == 1 or (len(args) == 3 and args[1] == "-m")), args
    if len(args) == 1:
        return set(markers)
    code = compile(args[2], "<-m>", "eval")
    return {nodeid for nodeid, names in markers.items() if eval(code, {"__builtins__": {}}, _Marks(names))}


@pytest.fixture(scope="module")
def every_test(request) -> dict[str, set[str]]:
    with pytest.MonkeyPatch.context() as monkeypatch:
        return collect(["tests"], monkeypatch)


def test_every_test_runs_somewhere_and_cpu_sessions_run_each_once(every_test):
    chosen = {name: selected(every_test, args) for name, args in selections().items()}
    everything, slow = set(every_test), selected(every_test, ["tests", "-m", "slow"])
    assert len(everything) > 300
    assert slow and slow <= everything  # slow tests are skipped only outside CI (the test below), so CI runs them
    assert set().union(*chosen.values()) == everything, "tests no session runs"
    assert not chosen["unit"] & chosen["pin"], "tests that every pin session would repeat"
    in_megatron_dirs = {t for t in everything if t.startswith(("tests/contract/", "tests/integration/"))}
    assert in_megatron_dirs and not chosen["unit"] & in_megatron_dirs
    assert in_megatron_dirs - chosen["gpu"] <= chosen["pin"]


def test_one_collection_selects_what_pytest_selects(every_test, monkeypatch):
    args = selections()["pin"]  # "megatron and not gpu": a name, `not` and `and`, on the smaller selection
    assert set(collect(args, monkeypatch)) == selected(every_test, args)


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
