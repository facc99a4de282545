"""The path a newcomer follows from the README, as far as it runs offline: vendor the runtime into a package of a
project, check the copy, make the README's calls through it, and ask the gate for help and for a project gate.

Not covered here (needs the package index or megatron-core): downloading a candidate for `gate ... --project .`
(the offline run must fail cleanly, which is checked), and `build_ddp_config` / `audit` with a real megatron-core
(the contract tests in tests/contract/ do that on every pin)."""
from __future__ import annotations

import ast
import json
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
README = (REPO / "README.md").read_text(encoding="utf-8")


def readme_block(language: str, containing: str) -> str:
    blocks = re.findall(rf"^```{language}\n(.*?)^```", README, re.S | re.M)
    return next(block for block in blocks if containing in block)


def vendor_commands() -> list[list[str]]:
    lines = readme_block("bash", "compat vendor").splitlines()
    return [shlex.split(line.split("#", 1)[0]) for line in lines if line.startswith("python -m compat vendor")]


def run(argv: list[str], cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, *argv[1:]], cwd=cwd, capture_output=True, text=True, timeout=120)


@pytest.fixture()
def host(tmp_path) -> Path:
    """A project whose package exists (the README: DEST's parent must already be a package)."""
    (tmp_path / "myproj" / "_vendor").mkdir(parents=True)
    (tmp_path / "myproj" / "__init__.py").write_text("")
    (tmp_path / "myproj" / "_vendor" / "__init__.py").write_text("")
    return tmp_path


def test_readme_vendor_commands_write_and_check_a_copy(host):
    write, check = vendor_commands()
    assert "--check" not in write and "--check" in check
    done = run(write, host)
    assert done.returncode == 0, done.stderr
    assert (host / "myproj" / "_vendor" / "mcore_compat" / "VENDORED.json").is_file()
    assert run(check, host).returncode == 0
    (host / "myproj" / "_vendor" / "mcore_compat" / "fp32_rule.py").write_text("# edited\n")
    assert run(check, host).returncode == 1  # drift is reported, as the README says


CALLS = """
import json, sys
from myproj._vendor import mcore_compat as compat
optimizer_config = {"optimizer": "adam"}
out = {"skipped": []}
for statement in json.loads(sys.argv[1]):
    try:
        exec(statement)
    except compat.MegatronNotInstalledError:
        out["skipped"].append(statement.split("(")[0])
    except NameError as exc:  # a name only a call that needs megatron would have bound
        out["skipped"].append(f"NameError {exc.name}")
out["overrides"] = overrides
out["run"] = run.kwargs()
print(json.dumps(out, default=repr))
"""


def test_readme_calls_run_through_the_vendored_copy(host):
    write, _ = vendor_commands()
    assert run(write, host).returncode == 0
    block = readme_block("python", "resolve_ddp_overrides")
    statements = [ast.get_source_segment(block, node) for node in ast.parse(block).body]
    assert any("resolve_configs" in s for s in statements) and any("audit" in s for s in statements)
    env = {**os.environ, "PYTHONSAFEPATH": ""}  # as a user's `python` runs: the project directory first on sys.path
    done = subprocess.run([sys.executable, "-c", CALLS, json.dumps(statements)], cwd=host, capture_output=True,
                          text=True, timeout=120, env=env)
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)
    assert out["overrides"] == {"grad_reduce_in_fp32": True}  # the FP32-by-default rule, as the rule table says
    assert out["run"]["ddp"]["grad_reduce_in_fp32"] is True
    megatron_present = subprocess.run([sys.executable, "-c", "import megatron.core"], capture_output=True).returncode == 0
    if not megatron_present:
        assert out["skipped"] == ["ddp_config = compat.build_ddp_config", "NameError ddp_config"]


def test_gate_help_names_the_project_option():
    done = subprocess.run([sys.executable, "-m", "compat", "gate", "--help"], capture_output=True, text=True,
                          cwd=REPO, timeout=120)
    assert done.returncode == 0
    assert "--project" in done.stdout and "--against" in done.stdout


def test_readme_project_gate_offline_fails_cleanly(host):
    """The README's `gate megatron-core==0.20.0 --project .` with no index (the test environment refuses
    connections): exit 3, one line on stderr, no traceback."""
    line = next(line for line in readme_block("bash", "--project .").splitlines() if "--project ." in line)
    argv = shlex.split(line.split("#", 1)[0])
    assert argv[:2] == ["mcore-compat", "gate"]
    done = subprocess.run([sys.executable, "-m", "compat", *argv[1:]], cwd=host, capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 3
    assert len(done.stderr.strip().splitlines()) == 1 and "Traceback" not in done.stderr
