"""Imports an ImportError guard swallows: a package that cannot import and is imported only under such a guard
never runs (what it uses is guarded), unless some code imports it unguarded or nothing imports it (then it is run
directly); a word in a comment of an import names no module. How swallowed.py reads an import statement's place:
test_swallowed_import_places.py."""
from __future__ import annotations

import pytest

from compat.tooling.gate.surface import check as c

from ..builders import breaking_places as where
from ..builders import gate_on_pair as gate
from ..builders import pair_releases


@pytest.fixture
def wheels(tmp_path, monkeypatch):
    """Releases 0.3.0 and 0.4.0 of the candidate pair in builders.py."""
    return pair_releases(tmp_path, monkeypatch)


PLUGIN = {
    "pkg/__init__.py": """
        from contextlib import suppress
        from .core import Core
        with suppress(ImportError):
            from .plugin import Plugin
        """,
    "pkg/core.py": "class Core:\n    pass\n",
    "pkg/plugin/__init__.py": "from pkg.plugin.bridge import Plugin\n",
    "pkg/plugin/bridge.py": """
        from megatron.core.parallel_state import get_tensor_and_expert_parallel_rank
        from pkg.plugin.layers import rank
        class Plugin:
            pass
        """,
    "pkg/plugin/layers.py": """
        from megatron.core import parallel_state
        def rank():
            return parallel_state.get_tensor_and_expert_parallel_rank()
        """,
}


def test_a_package_that_cannot_import_and_is_imported_only_under_a_guard_never_runs(tmp_path, wheels):
    report = gate(tmp_path / "a", wheels, PLUGIN)
    assert report.exit_code == 0 and where(report, guarded=False) == set()
    guards = {(f.path, f.line): f.guard for f in report.findings if f.guarded}
    assert set(guards) == {("pkg/plugin/bridge.py", 2), ("pkg/plugin/layers.py", 4)}
    assert all("pkg/plugin/bridge.py:2" in guard and "pkg/__init__.py:5" in guard for guard in guards.values())
    assert gate(tmp_path / "b", wheels, PLUGIN, "0.3.0").findings == []


def test_a_word_in_a_comment_of_an_import_names_no_module(tmp_path, wheels):
    files = {**PLUGIN, "run.py": "from pkg import (\n    Core,  # the plugin is optional\n)\nCore()\n"}
    assert where(gate(tmp_path, wheels, files), guarded=False) == set()


@pytest.mark.parametrize("extra", [
    {"run.py": "from pkg.plugin.layers import rank\nrank()\n"},  # another module imports it unguarded
    {"pkg/__init__.py": "from .plugin import Plugin\n"},  # the package imports it unguarded
])
def test_a_failing_module_some_code_imports_unguarded_still_breaks(tmp_path, wheels, extra):
    report = gate(tmp_path, wheels, {**PLUGIN, **extra})
    assert {("pkg/plugin/bridge.py", 2, c.MISSING_NAME), ("pkg/plugin/layers.py", 4, c.MISSING_NAME)} <= \
        where(report, guarded=False)


def test_a_module_nothing_imports_is_run_directly(tmp_path, wheels):
    report = gate(tmp_path, wheels, {"script.py": """
        from megatron.core.parallel_state import get_tensor_and_expert_parallel_rank
        print(get_tensor_and_expert_parallel_rank())
        """})
    assert ("script.py", 2, c.MISSING_NAME) in where(report, guarded=False)
