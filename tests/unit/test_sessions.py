"""The nox sessions' test selections (noxfile.SELECTION) cover every test, and the CPU sessions run each once:
registry-only tests in `unit`, megatron-marked tests in every `mcore-<version>`, gpu tests in `gpu-<version>`."""
from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def selections() -> dict[str, list[str]]:
    """SELECTION from noxfile.py, read with ast (importing the noxfile needs nox)."""
    tree = ast.parse((ROOT / "noxfile.py").read_text(encoding="utf-8"))
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(getattr(t, "id", None) == "SELECTION" for t in node.targets):
            return ast.literal_eval(node.value)
    raise AssertionError("noxfile.py defines no SELECTION")


def collect(*args: str) -> set[str]:
    proc = subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider",
                           "-p", "no:xdist", *args], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert proc.returncode in (0, 5), proc.stdout[-3000:] + proc.stderr[-3000:]
    return {line for line in proc.stdout.splitlines() if "::" in line}


def test_every_test_runs_somewhere_and_cpu_sessions_run_each_once():
    chosen = {kind: collect(*args) for kind, args in selections().items()}
    everything = collect("tests")
    assert len(everything) > 300
    assert set().union(*chosen.values()) == everything, "tests no session runs"
    assert not chosen["unit"] & chosen["pin"], "tests that every pin session would repeat"
    in_megatron_dirs = {t for t in everything if t.startswith(("tests/contract/", "tests/integration/"))}
    assert in_megatron_dirs and not chosen["unit"] & in_megatron_dirs
    assert in_megatron_dirs - chosen["gpu"] <= chosen["pin"]
