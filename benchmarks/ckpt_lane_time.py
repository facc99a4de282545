"""Wall and CPU time of the checkpoint lane, ``nox -t ckpt`` (a figure for the 90-minute CI budget).

    python -m benchmarks.ckpt_lane_time                 # warm: lane venvs as they are
    python -m benchmarks.ckpt_lane_time --mode cold     # remove the lane venvs (.nox/*ckpt-venv-*) first

"cold" rebuilds the lane venvs from the uv cache, as in CI, where the mcore-<version> sessions have filled it with
the same wheels before the ckpt sessions run. Records total wall time, the CPU time of everything nox ran, the load
average before and after (the machine is shared), and every session's wall time, into the "runs" block of
benchmarks/results/ckpt_lane_time.json (the lane, run here with ``-- --record``, writes each pair's side timings
into its "pairs" block; a plain ``nox -t ckpt`` writes them under the ignored benchmarks/results/raw/).
"""
from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import re
import resource
import shutil
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "benchmarks" / "results" / "ckpt_lane_time.json"
RE_END = re.compile(r"^nox > \* (?P<name>\S+): (?P<status>\w+), took (?P<took>.+)$")


def _loadavg() -> str:
    return Path("/proc/loadavg").read_text(encoding="ascii").strip()


def _seconds(took: str) -> float | None:
    """nox's "took 1 minute and 3 seconds" / "took 47 seconds" / "took a minute"."""
    total, found = 0.0, False
    for amount, unit in re.findall(r"(\d+|an?) (hour|minute|second)s?", took):
        total += (1 if amount in ("a", "an") else int(amount)) * {"hour": 3600, "minute": 60, "second": 1}[unit]
        found = True
    return total if found else None


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mode", choices=("warm", "cold"), default="warm")
    ap.add_argument("--nox", default=shutil.which("nox") or "nox")
    args = ap.parse_args(argv)
    if args.mode == "cold":
        for venv in (ROOT / ".nox").glob("*ckpt-venv-*"):
            shutil.rmtree(venv)
    load_before = _loadavg()
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.monotonic()
    proc = subprocess.run([args.nox, "-t", "ckpt", "--", "--record"], cwd=ROOT, capture_output=True, text=True, check=False)
    wall = time.monotonic() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    sessions = {}
    for line in (proc.stdout + proc.stderr).splitlines():
        m = RE_END.match(line.strip())
        if m:
            sessions[m["name"]] = {"status": m["status"], "wall_s": _seconds(m["took"])}
    run = {"when": dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"), "exit_code": proc.returncode,
           "wall_s": round(wall, 1),
           "cpu_s": round(after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime, 1),
           "cpus": os.cpu_count(), "loadavg_before": load_before, "loadavg_after": _loadavg(),
           "sessions": sessions}
    from compat.tooling.fsutil import atomic_write_text

    data = json.loads(RESULTS.read_text(encoding="utf-8")) if RESULTS.exists() else {}
    data.setdefault("runs", {})[args.mode] = run
    atomic_write_text(RESULTS, json.dumps(data, indent=1) + "\n")
    print(json.dumps(run, indent=1))
    if proc.returncode:
        print(proc.stdout[-3000:] + proc.stderr[-3000:], file=sys.stderr)
    return proc.returncode


if __name__ == "__main__":
    sys.exit(main())
