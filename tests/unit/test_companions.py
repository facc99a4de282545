"""The companion window on synthetic releases: two tiny megatron-core wheels, companion wheels of our own that
use what one release has and the other lacks, an isolated cache, no network."""
from __future__ import annotations

import json
import textwrap
import zipfile
from pathlib import Path

import pytest
import yaml

from compat.tooling.cli import main
from compat.tooling.gate.companions import catalog, window
from compat.tooling.gate.companions.catalog import Companion
from compat.tooling.gate.companions.source import release_tree
from compat.tooling.gate.surface.cache import release_models

ROOT = Path(__file__).resolve().parents[2]

CORE_OLD = {"megatron/core/__init__.py": "", "megatron/core/old_api.py": "def build(x):\n    return x\n"}
CORE_NEW = {"megatron/core/__init__.py": "", "megatron/core/new_api.py": "def build(x, *, y=0):\n    return x\n"}

COMPANION_V1 = {"tinycomp/__init__.py": "", "tinycomp/model.py": """
    from megatron.core.old_api import build
    def make():
        return build(1)
    """}
COMPANION_V2 = {"tinycomp/__init__.py": "", "tinycomp/model.py": """
    from megatron.core.new_api import build
    try:
        from megatron.core.fast_path import kernel
    except ImportError:
        kernel = None
    def make():
        return build(1, y=2)
    """}
TINY = Companion("tinycomp", "tinycomp", ("tinycomp",), "a companion of our own for the tests")


def _wheel(directory: Path, dist: str, version: str, files: dict) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / f"{dist}-{version}-py3-none-any.whl"
    with zipfile.ZipFile(path, "w") as z:
        z.writestr(f"{dist}-{version}.dist-info/METADATA",
                   f"Metadata-Version: 2.1\nName: {dist.replace('_', '-')}\nVersion: {version}\n")
        for name, text in files.items():
            z.writestr(name, textwrap.dedent(text))
    return path


@pytest.fixture
def cache(tmp_path, monkeypatch):
    """Releases 0.1.0 (old_api) and 0.2.0 (new_api) of megatron-core and tinycomp 1.0.0 / 2.0.0 in the cache."""
    wheels = tmp_path / "cache" / "wheels"
    monkeypatch.setenv("MCORE_COMPAT_CACHE", str(wheels.parent))
    _wheel(wheels, "megatron_core", "0.1.0", CORE_OLD)
    _wheel(wheels, "megatron_core", "0.2.0", CORE_NEW)
    _wheel(wheels, "tinycomp", "1.0.0", COMPANION_V1)
    _wheel(wheels, "tinycomp", "2.0.0", COMPANION_V2)
    monkeypatch.setattr(window, "release_files", lambda companion: ["1.0.0", "2.0.0"])
    release_models()
    return wheels


def test_each_release_is_ok_on_the_pin_it_was_written_for_and_breaks_on_the_other(cache):
    result = window.companion_window(TINY, pins=["0.1.0", "0.2.0"])
    cells = result.cells
    assert cells[("1.0.0", "0.1.0")].status == window.OK
    assert cells[("1.0.0", "0.2.0")].status == window.BREAKS
    assert "tinycomp/model.py:2 megatron.core.old_api" in cells[("1.0.0", "0.2.0")].first_break
    assert cells[("2.0.0", "0.1.0")].status == window.BREAKS
    assert cells[("2.0.0", "0.2.0")].status == window.OK
    assert cells[("2.0.0", "0.2.0")].guarded == 1  # the optional fast_path import: guarded, not a break
    assert result.newest_good() == ("2.0.0", "0.2.0")
    assert result.best_fit("1.0.0") == "0.1.0" and result.best_fit("2.0.0") == "0.2.0"
    assert result.exit_code == 0


def test_the_tree_is_unpacked_once_and_holds_only_the_import_roots(cache):
    tree = release_tree(TINY, "1.0.0")
    assert sorted(p.relative_to(tree).as_posix() for p in tree.rglob("*.py")) == ["tinycomp/__init__.py",
                                                                                 "tinycomp/model.py"]
    (tree / "tinycomp" / "marker.py").write_text("")
    assert release_tree(TINY, "1.0.0") == tree and (tree / "tinycomp" / "marker.py").exists()


def test_a_release_without_megatron_uses_or_without_its_roots_is_untested_with_the_reason(cache, monkeypatch):
    _wheel(cache, "tinycomp", "3.0.0", {"tinycomp/__init__.py": "import os\n"})
    _wheel(cache, "tinycomp", "4.0.0", {"other/__init__.py": ""})
    monkeypatch.setattr(window, "release_files", lambda companion: ["3.0.0", "4.0.0"])
    result = window.companion_window(TINY, pins=["0.1.0", "0.2.0"])
    assert result.cells[("3.0.0", "0.2.0")].reason == "its code uses nothing of megatron"
    assert "installs no Python files under tinycomp/" in result.cells[("4.0.0", "0.1.0")].reason
    assert result.newest_good() is None and result.exit_code == 1
    assert result.best_fit("3.0.0") is None


def test_no_clean_pin_still_names_the_best_fit(cache, monkeypatch):
    both = {"tinycomp/__init__.py": "", "tinycomp/m.py": """
        from megatron.core.old_api import build
        from megatron.core.new_api import build as build2
        from megatron.core.gone import a
        from megatron.core.gone2 import b
        """}
    _wheel(cache, "tinycomp", "5.0.0", both)
    monkeypatch.setattr(window, "release_files", lambda companion: ["5.0.0"])
    result = window.companion_window(TINY, pins=["0.1.0", "0.2.0"])
    assert [result.cells[("5.0.0", p)].breaking for p in ("0.1.0", "0.2.0")] == [3, 3]
    assert result.best_fit("5.0.0") == "0.2.0"  # a tie: the newest
    assert "**fit**" in result.to_markdown()


def test_a_recorded_install_shows_in_its_cell(cache, monkeypatch):
    record = {"companion": "tinycomp", "release": "2.0.0", "pin": "0.2.0", "outcome": "ok", "detail": "2 modules"}
    monkeypatch.setattr(catalog, "load_json", lambda name: {"cells": [record]})
    monkeypatch.setattr(window, "recorded_installs", catalog.recorded_installs)
    result = window.companion_window(TINY, pins=["0.1.0", "0.2.0"])
    assert result.cells[("2.0.0", "0.2.0")].real == record
    assert result.cells[("1.0.0", "0.2.0")].real is None
    assert "install ok" in result.to_markdown()


def test_the_command_prints_the_table_and_json(cache, monkeypatch, capsys):
    monkeypatch.setattr(catalog, "companions", lambda: {"tinycomp": TINY})
    assert main(["window", "--companion", "tinycomp", "--pins", "0.1.0,0.2.0", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["newest_known_good"] == {"release": "2.0.0", "pin": "0.2.0"}
    assert {(c["release"], c["pin"]): c["status"] for c in out["cells"]} == {
        ("1.0.0", "0.1.0"): "ok", ("1.0.0", "0.2.0"): "breaks", ("2.0.0", "0.1.0"): "breaks",
        ("2.0.0", "0.2.0"): "ok"}
    assert main(["window", "--companion", "tinycomp", "--pins", "0.1.0,0.2.0", "--releases", "1.0.0"]) == 0
    text = capsys.readouterr().out
    assert "| tinycomp | 0.1.0 | 0.2.0 |" in text and "| 1.0.0 | ok **fit** | breaks (1) |" in text


def test_bad_input_exits_with_one_line(cache, monkeypatch, capsys):
    monkeypatch.setattr(catalog, "companions", lambda: {"tinycomp": TINY})
    assert main(["window", "--companion", "tinycomp", "--releases", "9.9.9"]) == 3
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--releases 9.9.9: not a final, non-yanked release" in err
    with pytest.raises(SystemExit) as exit_info:
        main(["window", "--companion", "nope"])
    assert exit_info.value.code == 2


def test_default_pins_are_the_matrix_pins():
    pins = [p["version"] for p in yaml.safe_load((ROOT / "matrix.yaml").read_text())["pins"]]
    assert catalog.default_pins() == pins


def test_the_catalogue_names_a_reason_and_an_import_root_for_each_companion():
    known = catalog.companions()
    assert {"megatron-bridge", "megatron-fsdp", "nvidia-modelopt"} <= set(known)
    for entry in known.values():
        assert entry.roots and entry.why
    with pytest.raises(catalog.CompanionError, match="known: "):
        catalog.companion("nope")


def test_the_gate_section_checks_the_newest_unpacked_release_and_names_what_it_did_not(cache, monkeypatch):
    from types import SimpleNamespace

    from compat.tooling.gate.companions import gate_section

    other = Companion("never-read", "never-read", ("never_read",), "not in the cache")
    monkeypatch.setattr(gate_section, "companions", lambda: {"tinycomp": TINY, "never-read": other})
    release_tree(TINY, "1.0.0")
    release_tree(TINY, "2.0.0")
    on_new = gate_section.companions_section(cache / "megatron_core-0.2.0-py3-none-any.whl")
    assert [(r["companion"], r["release"], r["status"]) for r in on_new["checked"]] == [("tinycomp", "2.0.0", "ok")]
    assert on_new["not_checked"] == ["never-read"]
    on_old = gate_section.companions_section(cache / "megatron_core-0.1.0-py3-none-any.whl")
    assert on_old["checked"][0]["status"] == "breaks"
    assert "tinycomp/model.py:2 megatron.core.new_api" in on_old["checked"][0]["first_break"]
    text = "\n".join(gate_section.markdown_section(SimpleNamespace(sections={"companions": on_old})))
    assert "## Companions" in text and "`tinycomp==2.0.0`: breaks" in text
    assert "`mcore-compat window --companion never-read`" in text


def test_offline_the_window_uses_the_releases_already_unpacked(cache, monkeypatch):
    from compat.errors import CandidateError

    release_tree(TINY, "2.0.0")

    def unreachable(companion):
        raise CandidateError("cannot reach the index")

    monkeypatch.setattr(window, "release_files", unreachable)
    result = window.companion_window(TINY, pins=["0.2.0"])
    assert result.releases == ["2.0.0"] and result.cells[("2.0.0", "0.2.0")].status == window.OK
    assert any("the index is unreachable: cannot reach the index" in n for n in result.notes)
    monkeypatch.setattr(window, "unpacked_releases", lambda package: [])
    with pytest.raises(CandidateError, match="cannot reach the index"):
        window.companion_window(TINY, pins=["0.2.0"])
