"""compat.tooling.pytest_gloo and torchrun's command builders, without torch: the rank launch is a stand-in script
that writes the rank files the real ranks (compat.tooling.gloo_rank) write."""
from __future__ import annotations

import json
import sys
import textwrap
import time

import pytest

from compat.tooling import pytest_gloo as pg
from compat.tooling import torchrun as tr


def module_level() -> int:
    return 1


def test_target_name_and_import_root(tmp_path):
    assert pg.target_name(module_level) == f"{__name__}:module_level"
    with pytest.raises(TypeError, match="module level"):
        pg.target_name(lambda: 1)

    def local():
        return 1
    with pytest.raises(TypeError, match="local"):
        pg.target_name(local)
    (tmp_path / "pkg" / "sub").mkdir(parents=True)
    assert pg.import_root("pkg.sub.mod", str(tmp_path / "pkg" / "sub" / "mod.py")) == str(tmp_path)
    assert pg.import_root("pkg.sub", str(tmp_path / "pkg" / "sub" / "__init__.py")) == str(tmp_path)
    assert pg.import_root("mod", str(tmp_path / "mod.py")) == str(tmp_path)


def test_fixture_command_is_torchrun_of_the_rank_module(tmp_path, monkeypatch):
    seen = {}
    monkeypatch.setattr(pg.GlooWorld, "_launch", lambda self, argv, out, n, timeout, roots: seen.update(
        argv=argv, n=n, roots=roots, spec=json.loads((out / "spec.json").read_text())) or [])
    pg.GlooWorld(tmp_path)(module_level, n=3, args=(1, "a"), kwargs={"k": 2})
    assert seen["argv"][:5] == [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node=3"]
    assert seen["argv"][5:7] == ["-m", "compat.tooling.gloo_rank"]
    assert seen["spec"]["target"] == f"{__name__}:module_level"
    assert (seen["spec"]["args"], seen["spec"]["kwargs"], seen["spec"]["patches"]) == ([1, "a"], {"k": 2}, True)
    assert seen["roots"] == [str(pg.Path(__file__).resolve().parent)]
    with pytest.raises(ValueError, match="n=0"):
        pg.GlooWorld(tmp_path)(module_level, n=0)


FAKE_RANKS = """
import json, sys, time
out, n, mode = sys.argv[1], int(sys.argv[2]), sys.argv[3]
if mode == "hang":
    time.sleep(60)
for r in range(n):
    err = "Traceback: ValueError: boom" if mode == "fail" and r == 1 else None
    json.dump({"rank": r, "error": err, "value": r * 10, "patches": []}, open(f"{out}/rank{r}.json", "w"))
sys.exit(1 if mode == "fail" else 0)
"""


@pytest.mark.parametrize("mode", ["ok", "fail", "hang"])
def test_launch_collects_results_failures_and_timeouts(tmp_path, mode):
    script = tmp_path / "fake.py"
    script.write_text(textwrap.dedent(FAKE_RANKS))
    world = pg.GlooWorld(tmp_path)
    argv = [sys.executable, str(script), str(tmp_path), "2", mode]
    if mode == "ok":
        assert world._launch(argv, tmp_path, 2, 30, []) == [0, 10]
        return
    t0 = time.monotonic()
    with pytest.raises(pg.GlooWorldError) as exc:
        world._launch(argv, tmp_path, 2, 2 if mode == "hang" else 30, [])
    if mode == "fail":
        assert "1 of 2 ranks failed" in str(exc.value) and "boom" in str(exc.value)
        assert exc.value.ranks[0]["value"] == 0
    else:
        assert time.monotonic() - t0 < 30 and "killed after 2 s" in str(exc.value)
        assert all("wrote no result" in r["error"] for r in exc.value.ranks)


def test_torchrun_argv_and_bad_input():
    assert tr.torchrun_argv(4, ["-m", "x"], python="/v/python") == [
        "/v/python", "-m", "torch.distributed.run", "--standalone", "--nproc_per_node=4", "-m", "x"]
    for bad in (0, -1, True, "2"):
        with pytest.raises(ValueError, match="nproc="):
            tr.torchrun_argv(bad, ["x"])
    with pytest.raises(ValueError, match="program"):
        tr.torchrun_argv(1, [])


def test_pytest_ranks_argv_writes_one_junit_per_rank(tmp_path):
    import subprocess

    argv = tr.pytest_ranks_argv(2, ["tests", "-m", "gpu", "-k", "a b"], str(tmp_path / "j d"), python="/v/python")
    assert argv[:6] == ["/v/python", "-m", "torch.distributed.run", "--standalone", "--nproc_per_node=2",
                        "--no-python"]
    program = argv[6:]  # what torchrun runs in each rank, with RANK set: here with echo for the interpreter
    program[3] = "echo"
    out = subprocess.run(program, env={"RANK": "1", "PATH": "/usr/bin:/bin"}, capture_output=True, text=True)
    assert out.stdout.split() == ["-m", "pytest", "tests", "-m", "gpu", "-k", "a", "b",
                                  f"--junitxml={tmp_path}/j", "d/junit-rank1.xml"]  # echo splits on spaces


@pytest.mark.parametrize(("visible", "want"), [(None, 4), ("", 0), ("0,2", 2), ("1,-1,2", 1), ("0,1,2,3,4,5", 4),
                                               ("GPU-aaa", 1)])
def test_visible_gpu_count(visible, want):
    lines = [f"GPU {i}: NVIDIA H100 (UUID: GPU-{i})" for i in range(4)] + ["", "No devices"]
    env = {} if visible is None else {"CUDA_VISIBLE_DEVICES": visible}
    assert tr.visible_gpu_count(lines, env) == want


def test_gpu_sessions_run_pytest_under_torchrun_over_every_visible_gpu():
    """noxfile.py (read with ast: importing it needs nox): gpu-* pass ranks=gpu_ranks() to run_pytest, which builds
    its command with torchrun.pytest_ranks_argv; gpu_ranks counts with torchrun.visible_gpu_count."""
    import ast
    from pathlib import Path

    tree = ast.parse((Path(__file__).resolve().parents[2] / "noxfile.py").read_text(encoding="utf-8"))
    funcs = {n.name: n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef)}

    def calls(name):
        return [c for c in ast.walk(funcs[name]) if isinstance(c, ast.Call)]

    gpu = [c for c in calls("make_gpu_session") if ast.unparse(c.func) == "run_pytest"]
    assert [ast.unparse(k.value) for c in gpu for k in c.keywords if k.arg == "ranks"] == ["gpu_ranks()"]
    cpu = [c for c in calls("make_cpu_session") if ast.unparse(c.func) == "run_pytest"]
    assert cpu and not any(k.arg == "ranks" for c in cpu for k in c.keywords)
    assert "torchrun.pytest_ranks_argv" in {ast.unparse(c.func) for c in calls("run_pytest")}
    assert "torchrun.visible_gpu_count" in {ast.unparse(c.func) for c in calls("gpu_ranks")}
