"""Wall time of the surface gate, whole process, warm model cache: one candidate, and --window over 13 releases.
Also the cold cost of building one candidate model with ``ast``, and (with --griffe-python) what griffe takes to
load the same wheel, unpacked, for comparison.

    python -m benchmarks.surface_time [--mirror DIR] [--runs 5] [--griffe-python PATH]

The project is mbridge at 10cb17f59 (142 Python files, 89 of them use megatron), exported from the fetched snapshot
into a temporary directory; Megatron-Bridge at 067f987df (474 files use megatron) is timed once as a large case.
Writes ``benchmarks/results/surface_time.json``. Times are figures, not asserts; the load average is
recorded next to them (the machine may be shared).
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

from compat.tooling.archive import open_source  # noqa: E402
from compat.tooling.gate.surface.model import build_model  # noqa: E402
from compat.tooling.gate.surface.release_gate import candidate_path  # noqa: E402
from tools.git_snapshots import add_mirror_option, export, git_dir, mirror_root  # noqa: E402

PROJECT = ("ISEEKYAN/mbridge", "10cb17f59")
LARGE = ("NVIDIA-NeMo/Megatron-Bridge", "067f987df")
CANDIDATE = "0.19.2"
WINDOW = "0.14.0..0.19.2"  # 13 non-yanked releases
GRIFFE_PROBE = """
import resource, sys, time, griffe
t = time.perf_counter()
griffe.load("megatron", search_paths=[sys.argv[1]], allow_inspection=False, resolve_aliases=False)
print(time.perf_counter() - t, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024)
"""


def loadavg() -> list:
    return open("/proc/loadavg").read().split()[:3]


def timed(cmd: list, runs: int) -> dict:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    subprocess.run(cmd, capture_output=True, env=env, check=False)  # warm: builds and caches what is missing
    walls, code = [], None
    for _ in range(runs):
        started = time.perf_counter()
        code = subprocess.run(cmd, capture_output=True, env=env, check=False).returncode
        walls.append(time.perf_counter() - started)
    return {"command": " ".join(cmd[1:]), "exit_code": code, "runs": runs,
            "median_s": round(statistics.median(walls), 2), "min_s": round(min(walls), 2),
            "max_s": round(max(walls), 2)}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_mirror_option(parser)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--griffe-python", help="an interpreter with griffe installed (optional comparison)")
    parser.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results" / "surface_time.json")
    args = parser.parse_args()
    wheel = candidate_path(CANDIDATE)
    result = {"date": time.strftime("%Y-%m-%d"), "loadavg_before": loadavg(), "cpus": os.cpu_count()}
    with tempfile.TemporaryDirectory(prefix="surface-time-") as tmp:
        project, large = Path(tmp) / "mbridge", Path(tmp) / "megatron-bridge"
        result["project"] = {"repo": PROJECT[0], "commit": export(git_dir(mirror_root(args.mirror), PROJECT[0]), PROJECT[1],
                                                                   project)}
        result["large_project"] = {"repo": LARGE[0], "commit": export(git_dir(mirror_root(args.mirror), LARGE[0]), LARGE[1],
                                                                       large)}
        py = sys.executable
        result["one_candidate"] = timed([py, "-m", "compat", "gate", CANDIDATE, "--project", str(project)],
                                        args.runs)
        result["large_one_candidate"] = timed([py, "-m", "compat", "gate", CANDIDATE, "--project", str(large)], 1)
        result["window"] = timed([py, "-m", "compat", "gate", "--project", str(project), "--window", WINDOW],
                                 max(1, args.runs // 2))
        started = time.perf_counter()
        model = build_model(open_source(wheel))
        result["cold_model_build"] = {"wheel": wheel.name, "s": round(time.perf_counter() - started, 2),
                                      "modules": len(model["modules"]), "classes": len(model["classes"])}
        if args.griffe_python:
            unpacked = Path(tmp) / "wheel"
            with zipfile.ZipFile(wheel) as z:
                z.extractall(unpacked, [n for n in z.namelist() if n.startswith("megatron/")])
            out = subprocess.run([args.griffe_python, "-c", GRIFFE_PROBE, str(unpacked)], capture_output=True,
                                 text=True, check=True).stdout.split()
            result["griffe_load"] = {"s": round(float(out[0]), 2), "max_rss_mb": int(out[1])}
    result["loadavg_after"] = loadavg()
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=1) + "\n")
    print(json.dumps(result, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
