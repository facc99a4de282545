"""The candidate-model cache: a first run models only the candidate and the release before it, an entry is reused
and a corrupt one rebuilt, a save drops older model formats, and an unwritable cache does not stop the gate."""
from __future__ import annotations

import hashlib

from compat.tooling.gate.surface import cache as surface_cache
from compat.tooling.gate.surface import check as c
from compat.tooling.gate.surface.cache import release_models
from compat.tooling.gate.surface.lookup import Surface
from compat.tooling.gate.surface.release_gate import surface_gate

from .builders import make_project, make_wheel


def test_a_first_run_models_only_the_candidate_and_the_release_before_it(tmp_path, monkeypatch):
    wheels = tmp_path / "cache" / "wheels"
    monkeypatch.setenv("MCORE_COMPAT_CACHE", str(wheels.parent))
    training = {"megatron/core/__init__.py": "", "megatron/training/__init__.py": ""}
    paths = {"0.1.0": make_wheel(wheels, "0.1.0", {**training, "megatron/training/old.py": "x = 1\n"}),
             "0.2.0": make_wheel(wheels, "0.2.0", training), "0.3.0": make_wheel(wheels, "0.3.0", training)}
    project = make_project(tmp_path / "proj", {"a.py": """
        from megatron.training.old import x
        from megatron.training.tokenizer import build_tokenizer
        """})
    first = surface_gate(str(paths["0.3.0"]), project)
    assert set(release_models(modelled_only=True)) == {"0.2.0", "0.3.0"}  # 0.2.0: the override check's baseline
    assert first.history_releases == ["0.2.0", "0.3.0"]
    assert any("history from the 2 of 3 cached releases" in n for n in first.notes)
    # "not shipped" comes from every cached wheel's file list, modelled or not: 0.1.0 ships training.old
    assert {(f.name, f.kind) for f in first.findings} == {
        ("megatron.training.old", c.MISSING_MODULE), ("megatron.training.tokenizer", c.NOT_SHIPPED)}
    second = surface_gate(str(paths["0.1.0"]), project)
    assert second.history_releases == ["0.1.0", "0.2.0", "0.3.0"] and not any("history" in n for n in second.notes)


def test_model_cache_is_reused_and_a_corrupt_entry_is_rebuilt(tmp_path, releases, monkeypatch):
    wheel = releases["0.2.0"]
    first = surface_cache.model_for(wheel)
    assert Surface(first).resolve("megatron.core.enums.ModelType.encoder_or_decoder").ok
    surface_cache.save_models()  # the enum's module is in the entry now
    (entry,) = [p for p in surface_cache.cache_dir().iterdir() if p.name.startswith(first["sha256"])]
    calls = []
    real_plan = surface_cache._plan
    monkeypatch.setattr(surface_cache, "_plan", lambda *a: calls.append(1) or real_plan(*a))
    monkeypatch.setattr(surface_cache, "_LIVE", {})  # every model_for below reads the cache, as a new process does
    assert surface_cache.model_for(wheel) == first and calls == []  # read from the cache
    digest, _, body = entry.read_bytes().partition(b"\n")
    entry.write_bytes(digest + b"\n" + body.replace(b"encoder_or_decoder", b"encoder_XX_decoder"))
    surface_cache._LIVE.clear()
    assert surface_cache.model_for(wheel) == first and calls == [1]  # the digest no longer matches
    surface_cache._LIVE.clear()
    truncated = entry.read_bytes().partition(b"\n")[2][:-10]
    entry.write_bytes(hashlib.sha256(truncated).hexdigest().encode() + b"\n" + truncated)
    assert surface_cache.model_for(wheel) == first and calls == [1, 1]  # a consistent digest of broken JSON
    other = surface_cache.model_for(releases["0.1.0"])
    entry.write_bytes(next(p for p in surface_cache.cache_dir().iterdir()
                           if p.name.startswith(other["sha256"])).read_bytes())
    surface_cache._LIVE.clear()
    assert surface_cache.model_for(wheel) == first and calls == [1, 1, 1]  # another wheel's entry (0.1.0: cached)
    surface_cache._LIVE.clear()
    assert surface_cache.model_for(wheel) == first and calls == [1, 1, 1]  # the rebuilt entry is trusted again


def test_a_save_drops_older_model_formats_of_the_wheel_and_keeps_newer_ones(tmp_path, releases):
    model = surface_cache.model_for(releases["0.1.0"])
    key = model["sha256"]
    assert Surface(model).resolve("megatron.core.enums.ModelType").ok  # a module modelled: the save writes
    folder = surface_cache.cache_dir()
    folder.mkdir(parents=True, exist_ok=True)
    older, newer = (folder / f"{key}.model{surface_cache.MODEL_FORMAT + d}.json" for d in (-1, 1))
    for entry in (older, newer):
        entry.write_text("another checkout's entry")
    surface_cache.save_models()
    assert not older.exists() and newer.read_text() == "another checkout's entry"
    assert (folder / f"{key}.model{surface_cache.MODEL_FORMAT}.json").is_file()


def test_an_unwritable_cache_does_not_stop_the_gate(tmp_path, releases, monkeypatch):
    monkeypatch.setattr(surface_cache, "cache_dir", lambda: tmp_path / "file-not-dir" / "x")
    (tmp_path / "file-not-dir").write_text("")
    model = surface_cache.model_for(releases["0.1.0"])
    assert model["cache"].startswith("not cached")
