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
    assert kind == "fails" and detail.startswith("b: import error") and "(1 of 2 modules fail)" in detail
    kind, detail = ci.outcome({"a": "CPU-only import error: RuntimeError: needs CUDA", "b": "ok"})
    assert kind == "cannot-run" and detail.startswith("a: CPU-only")
    kind, _ = ci.outcome({"a": "CPU-only import error: x", "b": "import error: ModuleNotFoundError: No module "
                                                                 "named 'megatron'"})
    assert kind == "fails"


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
