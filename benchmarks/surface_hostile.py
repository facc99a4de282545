"""Time and peak memory of the surface gate on the hostile candidates (``tests/surface/hostile_candidates.py``),
whole process, measured with ``/usr/bin/time -v``: wall and CPU (user + system) seconds, maximum resident set size,
exit code, stderr lines.

    python -m benchmarks.surface_hostile [--only NAME ...] [--timeout 60] [--root CHECKOUT] [--label after]

``--root`` runs another checkout's ``compat`` on the same inputs (``git archive main | tar -x -C BEFORE``), for
the before figures. A case that runs past ``--timeout`` is killed and recorded as such. Results are merged into
``benchmarks/results/surface_hostile.json`` under ``--label``. Figures, not asserts; the load average is recorded
next to them (the machine may be shared).
"""
from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

from tests.surface import hostile_candidates  # noqa: E402

RESULTS = ROOT / "benchmarks" / "results" / "surface_hostile.json"


def loadavg() -> list:
    return open("/proc/loadavg").read().split()[:3]


def measure(case: str, root: Path, timeout: float) -> dict:
    with tempfile.TemporaryDirectory() as scratch:
        tmp = Path(scratch)
        spec = hostile_candidates.CASES[case](tmp)
        env = {**os.environ, "PYTHONPATH": str(root), **spec.get("env", {})}
        env.pop("MCORE_COMPAT_TRACEBACK", None)
        cmd = ["/usr/bin/time", "-v", sys.executable, "-m", "compat", *map(str, spec["args"])]
        started = time.perf_counter()
        try:
            proc = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=timeout, cwd=tmp)
        except subprocess.TimeoutExpired:
            return {"case": case, "timed_out": True, "wall_s": round(time.perf_counter() - started, 1),
                    "loadavg": loadavg()}
        report = proc.stderr
        rss = re.search(r"Maximum resident set size \(kbytes\): (\d+)", report)
        wall = re.search(r"Elapsed \(wall clock\) time \(h:mm:ss or m:ss\): (\S+)", report)
        cpu = [float(x) for x in re.findall(r"(?:User|System) time \(seconds\): ([\d.]+)", report)]
        own = [line for line in report.splitlines() if not line.startswith("\t") and "Command" not in line
               and line.strip()]
        return {"case": case, "timed_out": False, "exit_code": proc.returncode,
                "wall_s": round(_seconds(wall.group(1)), 2) if wall else None,
                "cpu_s": round(sum(cpu), 2) if cpu else None,  # user + system: what the load average does not change
                "max_rss_mb": round(int(rss.group(1)) / 1024, 1) if rss else None,
                "stderr_lines": len(own), "stderr": own[:2], "traceback": "Traceback" in report,
                "stdout_bytes": len(proc.stdout), "loadavg": loadavg()}


def _seconds(text: str) -> float:
    total = 0.0
    for part in text.split(":"):
        total = total * 60 + float(part)
    return total


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", nargs="*", default=None, help="case names (default: all)")
    parser.add_argument("--timeout", type=float, default=60.0)
    parser.add_argument("--root", type=Path, default=ROOT, help="the checkout whose compat runs")
    parser.add_argument("--label", default="after")
    args = parser.parse_args()
    results = json.loads(RESULTS.read_text()) if RESULTS.is_file() else {}
    rows = results.setdefault(args.label, {})
    for case in args.only or list(hostile_candidates.CASES):
        row = measure(case, args.root.resolve(), args.timeout)
        rows[case] = row
        print(json.dumps(row), flush=True)
    results["about"] = {"python": sys.version.split()[0], "cpus": os.cpu_count(),
                        "measured_with": "/usr/bin/time -v, whole process (python -m compat gate ...)"}
    RESULTS.write_text(json.dumps(results, indent=1, sort_keys=True) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
