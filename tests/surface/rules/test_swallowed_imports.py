"""Imports an ImportError guard swallows: a package that cannot import and is imported only under such a guard
never runs (what it uses is guarded), unless some code imports it unguarded or nothing imports it (then it is run
directly); a word in a comment of an import names no module. And how swallowed.py reads an import statement's
place from the text above it (no parse): top level or in a def, under an ImportError guard or not."""
from __future__ import annotations

import pytest

from compat.tooling.gate.surface import check as c
from compat.tooling.gate.surface.swallowed import _context, _import_statements

from ..builders import breaking_places as where
from ..builders import gate_on_pair as gate
from ..builders import pair_releases

SOURCE = """import os
try:
    from pkg import a
except ImportError:
    from pkg import b
def f(
    x,
):
    import pkg.c
with suppress(ImportError):
    if True:
        from pkg import d
class K:
    from pkg import e
try:
    pass
except (ValueError, ImportError):
    pass
else:
    from pkg import g
try:
    from pkg import h
except ValueError:
    pass
async def run():
    try:
        from pkg import i
    except Exception:
        pass
""".splitlines()


@pytest.mark.parametrize("name, top, guarded", [
    ("a", True, True),  # the try's body, its handler catches ImportError
    ("b", True, False),  # the handler's own body is not guarded by that try
    ("pkg.c", False, False),  # a def whose signature spans lines
    ("d", True, True),  # suppress(ImportError), through an if
    ("e", True, False),  # a class body runs at import
    ("g", True, False),  # a try's else block
    ("h", True, False),  # a try that does not catch ImportError
    ("i", False, True),
])
def test_an_import_statements_place_is_read_off_the_lines_above(name, top, guarded):
    (index,) = [i for i, line in enumerate(SOURCE) if line.strip().endswith(f"import {name}")]
    assert _context(SOURCE, index) == (top, guarded)


def test_import_statements_are_found_from_their_first_word_in_order():
    text = b"from a import (b,\n    c)  # import x\nimport d as e, f\n    from .g import h\nimportant = 1\nfrom_x = 2\n"
    found = [(m.group(0).split()[0], indented) for m, indented in _import_statements(text)]
    assert found == [(b"from", False), (b"import", False), (b"from", True)]


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
