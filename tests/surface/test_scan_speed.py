"""The surface scan's speed mechanisms change nothing it finds: the spelling prefilters (a function or a test whose
lines spell nothing that matters is not walked) agree with the full walk, and the per-file scan cache gives a warm
run the same uses without parsing, rescans what changed and ignores an entry it cannot trust."""
from __future__ import annotations

import textwrap

import pytest

from compat.tooling.gate.surface import project as surface_project
from compat.tooling.gate.surface import scan_cache
from compat.tooling.gate.surface.project import scan_project, scan_source

# Each case: a source, and (line, name) uses the scan must find in it (so that agreeing is not agreeing on nothing).
CASES = {
    "a version flag named without 'ver'": ("""
        from packaging.version import Version as V
        import megatron.core
        from megatron.core import parallel_state as ps
        NEW = V(megatron.core.__version__) >= V("0.14")
        def helper():
            return 1
        def f():
            if NEW:
                return ps.get_new()
            return ps.get_old()
        """, {(9, "megatron.core.parallel_state.get_new")}),
    "an availability check in a function": ("""
        try:
            from megatron.core.x import Foo
        except ImportError:
            Foo = None
        def f():
            if Foo is not None:
                return Foo(a=1)
        """, {(7, "megatron.core.x.Foo")}),
    "a probe": ("""
        from megatron.core import parallel_state as ps
        def f():
            if hasattr(ps, "get_new"):
                return ps.get_new()
        """, {(4, "megatron.core.parallel_state.get_new")}),
    "an import inside a function": ("""
        def f():
            from megatron.core import mpu
            return mpu.get_x()
        """, {(3, "megatron.core.mpu.get_x")}),
    "a nested function using its parent's binding": ("""
        def f():
            from megatron.core import mpu as m
            def g():
                return m.get_y()
            return g
        """, {(4, "megatron.core.mpu.get_y")}),
    "a method reading what its megatron base sets": ("""
        from megatron.core.transformer.module import MegatronModule
        class A(MegatronModule):
            def f(self):
                return self.config
        """, {(4, "megatron.core.transformer.module.MegatronModule.config")}),
    "a star import": ("""
        from megatron.core.parallel_state import *
        def f():
            return get_x()
        """, {(3, "megatron.core.parallel_state.get_x")}),
    "an identifier Python normalises (NFKC)": ("""
        from megatron.core import parallel_state as ps
        def f():
            return \uff50\uff53.get_x()
        """, {(3, "megatron.core.parallel_state.get_x")}),
    "a dead branch and TYPE_CHECKING": ("""
        from typing import TYPE_CHECKING
        from megatron.core import parallel_state as ps
        def f():
            if TYPE_CHECKING:
                ps.only_for_types()
            if 0:
                ps.never()
            return ps.get_x()
        """, {(8, "megatron.core.parallel_state.get_x")}),
    "a megatron instance kept on self, used in another method": ("""
        from megatron.core.attention import SelfAttention
        class Holder:
            def __init__(self, cfg):
                self.attn = SelfAttention(cfg, None, 1)
            def run(self):
                return self.attn.hook(1, y=2)
        """, {(6, "megatron.core.attention.SelfAttention.hook")}),
    "overrides, one extending the base's method with super()": ("""
        from megatron.core.transformer.module import MegatronModule
        class A(MegatronModule):
            def forward(self, x):
                return super().forward(x)
            def state_dict(self):
                return {}
        """, {(3, "megatron.core.transformer.module.MegatronModule.forward"),
              (5, "megatron.core.transformer.module.MegatronModule.state_dict")}),
    "a spec edit in a function that names nothing of megatron": ("""
        from megatron.core.transformer import ModuleSpec
        class Mine:
            pass
        def edit(spec):
            spec.submodules.self_attention.module = Mine
        """, {(5, "")}),
}


def _shape(uses: list) -> list:
    return [(u.line, u.name, u.how, u.guards, u.keywords, u.siblings) for u in uses]


@pytest.mark.parametrize("case", sorted(CASES))
def test_the_prefilters_find_what_the_full_walk_finds(case):
    text, expected = CASES[case]
    source = textwrap.dedent(text).lstrip("\n")
    uses, sets = scan_source(source)
    full, full_sets = scan_source(source, prefilter=False)
    assert _shape(uses) == _shape(full) and sets == full_sets
    assert expected <= {(u.line, u.name) for u in uses}


def test_lines_ended_by_a_carriage_return_alone_are_counted_as_python_counts_them():
    source = b"from megatron.core import mpu\rdef f():\r    return 1\rdef g():\r    return mpu.get_x()\r"
    uses, _ = scan_source(source)
    assert _shape(uses) == _shape(scan_source(source, prefilter=False)[0])
    assert (5, "megatron.core.mpu.get_x") in {(u.line, u.name) for u in uses}


def _project(root, files: dict):
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(textwrap.dedent(text))
    return root


REEXPORTS = {
    "pkg/__init__.py": "",
    "pkg/helper.py": "from megatron.core import parallel_state as mpu\n",
    "pkg/user.py": "from pkg.helper import mpu\nmpu.get_x()\n",
    "other.py": "import os\n",
}


def test_a_warm_scan_parses_nothing_and_finds_the_same(tmp_path, monkeypatch):
    root = _project(tmp_path / "proj", REEXPORTS)
    cold = scan_project(root)
    assert ("pkg/user.py", "megatron.core.parallel_state.get_x") in {(u.path, u.name) for u in cold.uses}

    def refuse(*_args, **_kwargs):
        raise AssertionError("a warm scan parsed a file")

    monkeypatch.setattr(surface_project, "_scan", refuse)
    warm = scan_project(root)
    assert warm.uses == cold.uses and warm.sets == cold.sets and warm.files == cold.files


def test_a_changed_export_rescans_the_files_that_import_it(tmp_path):
    root = _project(tmp_path / "proj", REEXPORTS)
    scan_project(root)
    (root / "pkg/helper.py").write_text("from megatron.core import tensor_parallel as mpu\n")
    again = scan_project(root)
    assert [(u.path, u.name) for u in again.uses] == [(u.path, u.name) for u in scan_project(root, cache=False).uses]
    assert ("pkg/user.py", "megatron.core.tensor_parallel.get_x") in {(u.path, u.name) for u in again.uses}


def test_a_scan_cache_edited_by_anyone_without_the_key_is_not_trusted(tmp_path, monkeypatch):
    root = _project(tmp_path / "proj", REEXPORTS)
    cold = scan_project(root)
    (entry,) = (scan_cache.cache_dir() / "scan").glob("*.scan")
    raw = entry.read_bytes()
    entry.write_bytes(raw[:-1] + bytes([raw[-1] ^ 1]))
    parsed = []
    real = surface_project._scan
    monkeypatch.setattr(surface_project, "_scan", lambda *a, **k: parsed.append(a[1]) or real(*a, **k))
    assert scan_project(root).uses == cold.uses
    assert "pkg/user.py" in parsed  # scanned again, not read from the edited entry


def test_without_a_usable_key_nothing_is_cached(tmp_path, monkeypatch):
    root = _project(tmp_path / "proj", REEXPORTS)
    monkeypatch.setattr(scan_cache, "cache_key", lambda: (None, "no key"))
    scan_project(root)
    assert not (scan_cache.cache_dir() / "scan").exists()


def test_a_window_of_160_uses_over_17_releases_prints_per_file_only_the_rows_that_change():
    """The issue's size: the table is grouped under one heading per file (no path column) and a use failing the same
    way on every release is counted, not listed, unless every row is asked for."""
    from compat.tooling.gate.surface import check as c
    from compat.tooling.gate.surface.project import ProjectScan
    from compat.tooling.gate.surface.release_gate import SurfaceReport
    from compat.tooling.gate.surface.window import WindowReport

    releases = [f"0.{minor}.0" for minor in range(1, 18)]
    uses = [(f"pkg/file_{i % 8}.py", 10 + i, f"megatron.core.m.name_{i}") for i in range(160)]
    changing = {use for i, use in enumerate(uses) if i % 8 != 7}  # 140 rows change, 20 break everywhere
    reports = {}
    for index, version in enumerate(releases):
        findings = [c.Finding(path, line, name, c.MISSING_NAME, False) for path, line, name in uses
                    if (path, line, name) not in changing or index >= line % 17]
        reports[version] = SurfaceReport(version, version, "proj", ProjectScan("proj"), findings)
    window = WindowReport("proj", (releases[0], releases[-1]), releases, reports, "test")

    def table_rows(text: str) -> list:
        return [line for line in text.splitlines() if line.startswith("| ") and "megatron.core.m." in line]

    text = window.to_markdown()
    rows = table_rows(text)
    assert len(rows) == len({u for u in changing if u[1] % 17 > 0})  # a row failing from the first release is steady
    assert all(row.count("|") == 3 + len(releases) + 1 for row in rows)  # line, name, kind, one cell per release
    assert not any("pkg/file_" in row for row in rows)  # the path is the heading, not a column
    assert sorted(line for line in text.splitlines() if line.startswith("### ")) == \
        sorted(f"### `pkg/file_{i}.py`" for i in range(7))  # file_7 only breaks everywhere: no heading
    steady = 160 - len(rows)
    assert f"_{steady} uses fail the same way on every release of the window" in text
    assert len(table_rows(window.to_markdown(all_rows=True))) == 160


def test_a_gate_run_raises_the_collector_thresholds_only_while_it_runs(tmp_path, monkeypatch):
    import gc

    from compat.tooling.gate.surface import cli as surface_cli

    seen = []
    monkeypatch.setattr(surface_cli, "_run_surface", lambda args: seen.append(gc.get_threshold()) or 0)
    before = gc.get_threshold()
    assert surface_cli.run_surface(None) == 0
    assert seen == [surface_cli._FEWER_COLLECTIONS] and gc.get_threshold() == before
