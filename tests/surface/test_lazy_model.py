"""The lazy model (``lazy_model.py``) against the whole build (``model.build_model``): the same module and class
entries, on real release wheels and on a synthetic wheel with the shapes where building one module alone could
differ (a module that is both ``x.py`` and ``x/``, a class that two modules define under one name, a file that
does not parse, a compiled extension, a namespace directory)."""
from __future__ import annotations

import json

import pytest

from compat.tooling.archive import open_source
from compat.tooling.gate.surface import cache as surface_cache
from compat.tooling.gate.surface.lazy_model import LazyModel
from compat.tooling.gate.surface.lookup import Surface
from compat.tooling.gate.surface.model import SPEC_BUILT, build_model
from compat.tooling.gate.surface.release_gate import candidate_path

from .hostile_candidates import wheel

SHAPES = {
    "megatron/core/x.py": "class A:\n    a = 1\nclass B(A):\n    pass\n",
    "megatron/core/x/__init__.py": "from .y import *\nclass A:\n    b = 2\n",
    "megatron/core/x/y.py": "__all__ = ['f']\ndef f(a, *, k=1):\n    pass\n",
    "megatron/core/x/Z.py": "class A:\n    z = 3\n",
    "megatron/core/__init__.py": "class x:\n    class A:\n        c = 4\n",  # megatron.core.x.A too
    "megatron/core/broken.py": "def f(:\n",
    "megatron/core/ext/helpers_cpp.cpython-312-x86_64-linux-gnu.so": b"\0ELF",
    "megatron/core/ns/deep/mod.py": "try:\n    class C:\n        d = 1\n"
                                    "except ImportError:\n    class C:\n        e = 2\n",
}


def _lazy(path) -> LazyModel:
    return LazyModel.plan(open_source(path), sha256=None, version=None, open_source=lambda: open_source(path))


def _same_as_whole(path, lazy: LazyModel) -> dict:
    whole = build_model(open_source(path))
    assert list(lazy["modules"]) == list(whole["modules"])
    for name, entry in whole["modules"].items():
        assert lazy["modules"][name] == entry, name
    for qual, entry in whole["classes"].items():
        assert lazy["classes"].get(qual) == entry, qual
    assert list(lazy["classes"]) == list(whole["classes"])
    assert sorted(lazy["unparsed"]) == sorted(whole["unparsed"])
    return whole


def test_a_module_built_alone_is_what_the_whole_build_makes_of_it(tmp_path):
    path = wheel(tmp_path / "w", SHAPES)
    lazy = _lazy(path)
    assert lazy["classes"].get("megatron.core.x.A")["a"] == {"c": "v", "a": "v", "b": "v"}  # three files, two modules
    assert "megatron.core.nope" not in lazy["modules"] and lazy["classes"].get("megatron.core.x.Nope") is None
    whole = _same_as_whole(path, lazy)
    assert whole["unparsed"] == ["megatron/core/broken.py"]


def test_a_lookup_builds_only_the_modules_it_reaches_and_a_saved_state_answers_the_same(tmp_path):
    path = wheel(tmp_path / "w", SHAPES)
    lazy = _lazy(path)
    assert Surface(lazy).resolve("megatron.core.ns.deep.mod.C.e").ok
    built = set(lazy.state()["modules"])
    assert built == {"megatron", "megatron.core", "megatron.core.ns", "megatron.core.ns.deep",
                     "megatron.core.ns.deep.mod"}
    again = LazyModel.from_state(json.loads(json.dumps(lazy.state())), lambda: open_source(path))
    assert set(again.state()["modules"]) == built  # nothing rebuilt by reading it back
    _same_as_whole(path, again)


@pytest.mark.network
# 0.19.2 (542 modules, ~6 s: the whole model and every module built lazily) runs in CI; 0.8.0 and the synthetic
# wheels above keep the mechanism checked in a local run
@pytest.mark.parametrize("version", ["0.8.0", pytest.param("0.19.2", marks=pytest.mark.slow)])
def test_the_lazy_model_of_a_real_wheel_is_the_whole_model(version):
    path = candidate_path(version)
    lazy = _lazy(path)
    surface = Surface(lazy)
    assert surface.resolve("megatron.core.parallel_state.get_data_parallel_rank").ok
    assert len(lazy.state()["modules"]) < len(lazy["modules"]) // 10  # most of the wheel was not read
    builders = sorted(q for q, entry in lazy["classes"].spelling("build_module") if entry.get(SPEC_BUILT))
    assert len(lazy.state()["modules"]) < len(lazy["modules"]) // 2
    whole = _same_as_whole(path, lazy)
    assert builders and builders == sorted(q for q, entry in whole["classes"].items() if entry.get(SPEC_BUILT))


def test_the_cache_stores_what_a_run_built_and_the_next_run_reads_it(tmp_path, monkeypatch):
    monkeypatch.setenv("MCORE_COMPAT_CACHE", str(tmp_path / "cache"))
    path = wheel(tmp_path / "w", SHAPES)
    first = surface_cache.model_for(path)
    assert surface_cache.model_for(path) is first  # one model per wheel in a process
    assert Surface(first).resolve("megatron.core.ns.deep.mod.C").ok
    surface_cache.save_models()
    stored = surface_cache.read_cached(first["sha256"])
    assert stored["modules"] == first.state()["modules"] and "megatron.core.ns.deep.mod" in stored["modules"]
    surface_cache._LIVE.clear()  # as a new process
    later = surface_cache.model_for(path)
    assert later is not first and later.state()["modules"] == stored["modules"]
    monkeypatch.setattr(later, "_open_source", lambda: pytest.fail("a cached module was parsed again"))
    assert Surface(later).resolve("megatron.core.ns.deep.mod.C").ok


def test_two_processes_that_built_different_modules_both_keep_them_in_the_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("MCORE_COMPAT_CACHE", str(tmp_path / "cache"))
    path = wheel(tmp_path / "w", {**SHAPES, "megatron/core/plain.py": "def g():\n    pass\n"})
    surface_cache.save_models()
    runs = []
    for name in ("megatron.core.ns.deep.mod.C", "megatron.core.plain.g"):
        surface_cache._LIVE.clear()  # each run is a new process, started before the other saved
        runs.append((surface_cache.model_for(path), name))
    for model, name in runs:
        assert Surface(model).resolve(name).ok
    for model, _name in runs:
        model.changed = True
        surface_cache._LIVE.clear()
        surface_cache._LIVE[surface_cache._entry_path(model["sha256"])] = model
        surface_cache.save_models()  # the second save used to replace the first's modules with its own
    stored = surface_cache.read_cached(runs[0][0]["sha256"])["modules"]
    assert {"megatron.core.ns.deep.mod", "megatron.core.plain"} <= set(stored)
    assert stored["megatron.core.ns.deep.mod"] == runs[0][0].state()["modules"]["megatron.core.ns.deep.mod"]


def test_a_file_two_releases_share_is_indexed_once_and_each_gets_its_own_entry(tmp_path, monkeypatch):
    from compat.tooling.gate.surface import lazy_model

    calls = []
    real = lazy_model.index_module
    monkeypatch.setattr(lazy_model, "_FILE_INDEX", {})  # nothing indexed by the tests before this one
    monkeypatch.setattr(lazy_model, "index_module", lambda *a: calls.append(a[1]) or real(*a))
    old = _lazy(wheel(tmp_path / "a", SHAPES, "0.1.0"))
    new = _lazy(wheel(tmp_path / "b", {**SHAPES, "megatron/core/x/y.py": "def f(a):\n    pass\n"}, "0.2.0"))
    for model in (old, new):
        assert model["modules"]["megatron.core.x.y"] and model["classes"]["megatron.core.ns.deep.mod.C"]
    assert calls.count("megatron/core/x/y.py") == 2 and calls.count("megatron/core/ns/deep/mod.py") == 1
    assert old["modules"]["megatron.core.x.y"] != new["modules"]["megatron.core.x.y"]
    assert old["modules"]["megatron.core.ns.deep.mod"] is not new["modules"]["megatron.core.ns.deep.mod"]
    _same_as_whole(tmp_path / "b" / "megatron_core-0.2.0-py3-none-any.whl", new)
