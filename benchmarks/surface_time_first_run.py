"""Wall and CPU time of the surface gate on a 2,500-file project (NeMo at 8cfedd7203, 2,503 files): a first run
(a fresh cache beside every cached release wheel: no model, no project scan cached), warm runs of one candidate,
the same with the project scan cache emptied before each run (the scan itself), and --window over 13
releases (the speed targets: 5 s, 3 s, 8 s). Figures, not asserts; the load average is recorded beside
them, and user CPU seconds too (the machine is shared, so wall time alone says little).

    python -m benchmarks.surface_time_first_run [--mirror DIR] [--runs 3] [--first-runs 1] [--label after]
        [--project NVIDIA-NeMo/Megatron-Bridge@067f987df]   # another project (the speed work was tuned on NeMo)

``--first-runs N``: N first runs, the model and scan caches emptied before each (``first_runs``: their median and
minimum; on a shared machine one run says little).

Appends one entry under ``--label`` to ``benchmarks/results/surface_time_first_run.json``.
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

from compat.tooling.gate.surface.cache import cached_wheels  # noqa: E402
from tools.git_snapshots import add_mirror_option, export, git_dir, mirror_root  # noqa: E402

PROJECT = ("NVIDIA/NeMo", "8cfedd7203")
CANDIDATE = "0.19.2"
WINDOW = "0.14.0..0.19.2"
OUT = ROOT / "benchmarks" / "results" / "surface_time_first_run.json"


def loadavg() -> list:
    return open("/proc/loadavg").read().split()[:3]


def once(cmd: list, env: dict) -> tuple[float, float, int]:
    """(wall s, user+sys CPU s of the child, exit code)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    code = subprocess.run(cmd, capture_output=True, env=env, check=False).returncode
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime), code


def figures(samples: list, code: int) -> dict:
    walls, cpus = [s[0] for s in samples], [s[1] for s in samples]
    return {"runs": len(samples), "exit_code": code, "median_wall_s": round(statistics.median(walls), 2),
            "min_wall_s": round(min(walls), 2), "median_cpu_s": round(statistics.median(cpus), 2),
            "loadavg_after": loadavg()}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_mirror_option(parser)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--first-runs", type=int, default=1)
    parser.add_argument("--label", default="after")
    parser.add_argument("--project", default="@".join(PROJECT), help="owner/name@revision of a fetched mirror")
    args = parser.parse_args()
    repo, _, revision = args.project.partition("@")
    wheels = cached_wheels()
    entry = {"date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "cpus": os.cpu_count(),
             "cached_wheels": len(wheels), "loadavg_before": loadavg()}
    py = sys.executable
    with tempfile.TemporaryDirectory(prefix="surface-first-") as tmp:
        project = Path(tmp) / "project"
        entry["project"] = {"repo": repo, "commit": export(git_dir(mirror_root(args.mirror), repo), revision or "HEAD", project),
                            "files": sum(1 for _ in project.rglob("*.py"))}
        fresh = Path(tmp) / "cache"
        (fresh / "wheels").mkdir(parents=True)
        for wheel in wheels.values():
            try:
                os.link(wheel, fresh / "wheels" / wheel.name)
            except OSError:
                shutil.copy2(wheel, fresh / "wheels" / wheel.name)
        env = {**os.environ, "PYTHONPATH": str(ROOT), "MCORE_COMPAT_CACHE": str(fresh)}
        gate = [py, "-m", "compat", "gate", CANDIDATE, "--project", str(project)]
        wall, cpu, code = once(gate, env)
        entry["first_run"] = {"wall_s": round(wall, 2), "cpu_s": round(cpu, 2), "exit_code": code,
                              "loadavg_after": loadavg()}
        if args.first_runs > 1:
            firsts = [(wall, cpu)]
            for _ in range(args.first_runs - 1):
                shutil.rmtree(fresh / "surface")  # nothing cached but the wheels, again
                firsts.append(once(gate, env)[:2])
            entry["first_runs"] = figures(firsts, code)
        entry["warm_one_candidate"] = figures([once(gate, env) for _ in range(args.runs)], code)
        cold_scans = []
        for _ in range(args.runs):  # models cached, the project scanned from scratch (no scan cache)
            shutil.rmtree(fresh / "surface" / "scan", ignore_errors=True)
            cold_scans.append(once(gate, env))
        entry["models_warm_scan_cold"] = figures(cold_scans, code)
        window = [py, "-m", "compat", "gate", "--project", str(project), "--window", WINDOW]
        once(window, env)  # models the window's releases
        samples = [once(window, env) for _ in range(max(1, args.runs // 2))]
        entry["warm_window_13"] = figures(samples, code)
    result = json.loads(OUT.read_text()) if OUT.exists() else {}
    result[args.label] = entry
    OUT.write_text(json.dumps(result, indent=1) + "\n")
    print(json.dumps(entry, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
