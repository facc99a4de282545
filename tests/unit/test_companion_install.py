"""The real-install half of the companion window: how an import probe becomes an outcome, and how recorded cells
are replaced (tools/companion_install.py; the installs themselves run in the companions-<pin> nox sessions)."""
from __future__ import annotations

import json

from compat.tooling.gate.companions.catalog import Companion
from tools import companion_install as ci


def test_outcome_tells_a_megatron_failure_from_another_dependency():
    assert ci.outcome({"a": "ok", "b": "ok"}) == ("ok", "2 modules import")
    kind, detail = ci.outcome({"a": "ok", "b": "import error: ImportError: cannot import name 'x' from "
                                           "'megatron.core.models' (...)"})
    assert kind == "fails" and detail.startswith("b: import error") and "(1 of 2 modules fail on megatron)" in detail
    kind, detail = ci.outcome({"a": "CPU-only import error: RuntimeError: needs CUDA", "b": "ok"})
    assert kind == "cannot-run" and detail.startswith("a: CPU-only")
    kind, _ = ci.outcome({"a": "CPU-only import error: x", "b": "import error: ModuleNotFoundError: No module "
                                                                 "named 'megatron'"})
    assert kind == "fails"


def test_a_plugin_for_a_package_not_installed_is_counted_not_held_against_the_pair():
    kind, detail = ci.outcome({"a": "ok", "b": "import error: ModuleNotFoundError: No module named "
                                                "'megatron.bridge'", "c": "undeclared import: flash_attn"})
    assert kind == "ok" and detail.startswith("1 modules import; 2 plugin modules need a package not installed")
    kind, _ = ci.outcome({"a": "import error: ModuleNotFoundError: No module named 'megatron.core.hybrid'"})
    assert kind == "fails"


def test_a_refused_install_keeps_the_resolvers_reason():
    out = ("x\n  × No solution found when resolving dependencies:\n  ╰─▶ Because the current Python version "
           "(3.11.7) does not satisfy Python>=3.12,<3.13 and megatron-bridge==0.6.2 depends on Python>=3.12\n")
    assert ci._resolver_reason(out).startswith("Because the current Python version (3.11.7) does not satisfy")
    assert ci._resolver_reason("no reason here") == ""


def test_record_replaces_the_same_cells_and_keeps_the_others(tmp_path):
    path = tmp_path / "installs.json"
    old = [{"companion": "c", "release": "1", "pin": "0.1", "outcome": "fails"},
           {"companion": "c", "release": "2", "pin": "0.1", "outcome": "ok"}]
    path.write_text(json.dumps({"about": "x", "cells": old}))
    ci.record([{"companion": "c", "release": "1", "pin": "0.1", "outcome": "ok"}], path)
    cells = json.loads(path.read_text())["cells"]
    assert [(c["release"], c["outcome"]) for c in cells] == [("1", "ok"), ("2", "ok")]


def test_the_requirement_carries_the_extras_a_user_installs_with():
    assert Companion("m", "mbridge", ("mbridge",), "", ("megatron",)).requirement("0.15.1") == \
        "mbridge[megatron]==0.15.1"
    assert Companion("f", "megatron-fsdp", ("megatron_fsdp",), "").requirement("0.6.1") == "megatron-fsdp==0.6.1"


def test_declared_dependencies_leave_out_what_the_pin_holds_and_follow_the_extras(tmp_path, monkeypatch):
    import zipfile

    wheels = tmp_path / "cache" / "wheels"
    wheels.mkdir(parents=True)
    monkeypatch.setenv("MCORE_COMPAT_CACHE", str(wheels.parent))
    meta = ("Metadata-Version: 2.1\nName: tinycomp\nVersion: 1.0\nRequires-Dist: einops\n"
            "Requires-Dist: megatron-core>=0.12.0; extra == \"megatron\"\nRequires-Dist: transformers; extra == "
            "\"megatron\"\nRequires-Dist: pytest; extra == \"test\"\nRequires-Dist: torch>=2.6\n")
    with zipfile.ZipFile(wheels / "tinycomp-1.0-py3-none-any.whl", "w") as z:
        z.writestr("tinycomp-1.0.dist-info/METADATA", meta)
        z.writestr("tinycomp/__init__.py", "")
    with_extra = Companion("t", "tinycomp", ("tinycomp",), "", ("megatron",))
    assert ci.declared_dependencies(with_extra, "1.0") == ["einops", "transformers"]
    assert ci.declared_dependencies(Companion("t", "tinycomp", ("tinycomp",), ""), "1.0") == ["einops"]
