"""Wall time of the nox matrix against the time pytest itself spends, warm and cold.

    python -m benchmarks.matrix_time                        # warm: nox -t cpu as things are
    python -m benchmarks.matrix_time --mode cold            # rm -r .nox and the uv cache first
    python -m benchmarks.matrix_time --mode both -s unit -s mcore-0.16.1
    python -m benchmarks.matrix_time -t newest -- -x        # after --: pytest arguments (nox posargs)
    python -m benchmarks.matrix_time --jobs 2               # nox -j 2: CPU sessions side by side
    python -m benchmarks.matrix_time --ref main --label before   # the noxfile and tests of another revision,
                                                            # run in a temporary git worktree on the same venvs

Runs ``nox --add-timestamp <selection>`` from the repo root (cold removes --envdir, default .nox) with UV_CACHE_DIR set to ``--uv-cache``
(default: ~/.cache/mcore-compat-bench-uv, a cache of its own so that "cold" never wipes the user's
uv cache; keep it on the same filesystem as .nox so uv can hardlink). For every session it records
the session's wall time, the setup before pytest (venv, installs, import check) and pytest's own
time from its final "=== ... in 12.34s ===" line, and the tests it ran/skipped/collected (the noxfile's
"<session>: N tests ran, M skipped, T collected" line). The run's CPU time (all child processes, from
getrusage) and the load average before and after are recorded too: on a shared machine CPU seconds are the
steadier figure. Results (one record per mode, replacing the last record of that mode) go to
benchmarks/results/matrix_time.json, the full nox output to <envdir>/bench-logs/; a table is printed.
"""
from __future__ import annotations

import argparse
import contextlib
import datetime as dt
import json
import os
import platform
import re
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "benchmarks" / "results" / "matrix_time.json"
DEFAULT_CACHE = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "mcore-compat-bench-uv"

TS = r"\[(?P<ts>\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3})\] "
RE_START = re.compile(r"^nox > " + TS + r"Running session (?P<name>\S+)")
RE_END = re.compile(r"^nox > " + TS + r"Session (?P<name>\S+) (?P<status>was successful|failed|was skipped|aborted)")
RE_PYTEST_CMD = re.compile(r"^nox > " + TS + r"pytest ")
RE_PYTEST_SUMMARY = re.compile(r"^=+ (?P<summary>.*?) in (?P<secs>[\d.]+)s(?: \([\d:]+\))? =+$")
RE_COUNTS = re.compile(r"nox > (?:" + TS + r")?(?P<name>\S+): (?P<ran>\d+) tests ran, (?P<skipped>\d+) skipped, "
                       r"(?P<collected>\d+) collected")
RE_ANSI = re.compile(r"\x1b\[[0-9;]*m")


def _ts(text: str) -> float:
    return dt.datetime.strptime(text, "%Y-%m-%d %H:%M:%S,%f").timestamp()


def parse_nox_output(lines) -> list[dict]:
    """Per-session records from ``nox --add-timestamp`` output."""
    sessions: list[dict] = []
    current = None
    for raw in lines:
        line = RE_ANSI.sub("", raw.rstrip("\n"))
        if m := RE_START.match(line):
            current = {"name": m["name"], "status": None, "wall_s": None, "setup_s": None,
                       "pytest_s": None, "pytest_summary": None, "tests_ran": None, "tests_skipped": None,
                       "tests_collected": None, "_start": _ts(m["ts"])}
            sessions.append(current)
        elif current is None:
            continue
        elif m := RE_PYTEST_CMD.match(line):
            if current["setup_s"] is None:
                current["setup_s"] = round(_ts(m["ts"]) - current["_start"], 2)
        elif m := RE_PYTEST_SUMMARY.match(line.strip()):
            # a session may run pytest more than once: add them up
            current["pytest_s"] = round((current["pytest_s"] or 0.0) + float(m["secs"]), 2)
            current["pytest_summary"] = m["summary"]
        elif (m := RE_COUNTS.search(line)) and m["name"] == current["name"]:  # a child's unended line may precede it
            current["tests_ran"], current["tests_skipped"] = int(m["ran"]), int(m["skipped"])
            current["tests_collected"] = int(m["collected"])
        elif m := RE_END.match(line):
            current["status"] = {"was successful": "success", "was skipped": "skipped"}.get(m["status"],
                                                                                           m["status"])
            current["wall_s"] = round(_ts(m["ts"]) - current["_start"], 2)
    for s in sessions:
        s.pop("_start", None)
    return sessions


def _cpu_children() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def run_once(mode: str, selection: list[str], posargs: list[str], uv_cache: Path, envdir: Path,
             jobs: int = 1, tree: Path = ROOT) -> dict:
    log_dir = envdir / "bench-logs"
    if mode == "cold":
        for path in (envdir, uv_cache):
            if path.exists():
                print(f"matrix_time: removing {path}", file=sys.stderr)
                shutil.rmtree(path)
    uv_cache.mkdir(parents=True, exist_ok=True)
    env = dict(os.environ, UV_CACHE_DIR=str(uv_cache))
    cmd = ["nox", "--add-timestamp", *selection]
    if jobs > 1:
        cmd += ["-j", str(jobs)]
    if envdir != tree / ".nox":
        cmd += ["--envdir", str(envdir)]
    if posargs:
        cmd += ["--", *posargs]
    log_dir.mkdir(parents=True, exist_ok=True)
    log_path = log_dir / f"matrix_time-{mode}.log"
    print(f"matrix_time: {' '.join(cmd)}  (UV_CACHE_DIR={uv_cache}, log {log_path})", file=sys.stderr)
    started = dt.datetime.now(dt.timezone.utc)
    load_before = list(os.getloadavg())
    cpu0 = _cpu_children()
    t0 = time.monotonic()
    lines = []
    with open(log_path, "w", encoding="utf-8") as log, subprocess.Popen(
            cmd, cwd=tree, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
            encoding="utf-8", errors="replace", bufsize=1) as proc:
        for line in proc.stdout:
            sys.stdout.write(line)
            log.write(line)
            lines.append(line)
        code = proc.wait()
    wall = time.monotonic() - t0
    cpu = _cpu_children() - cpu0
    sessions = parse_nox_output(lines)
    pytest_total = sum(s["pytest_s"] or 0.0 for s in sessions)
    setup_total = sum(s["setup_s"] or 0.0 for s in sessions)
    session_total = sum(s["wall_s"] or 0.0 for s in sessions)
    return {
        "mode": mode,
        "started_utc": started.isoformat(timespec="seconds"),
        "command": cmd,
        "tree": str(tree),
        "exit_code": code,
        "wall_s": round(wall, 2),
        "cpu_s": round(cpu, 2),
        "load_average_before": [round(x, 2) for x in load_before],
        "load_average_after": [round(x, 2) for x in os.getloadavg()],
        "tests_ran": sum(s["tests_ran"] or 0 for s in sessions),
        "tests_collected": sum(s["tests_collected"] or 0 for s in sessions),
        "sum_session_s": round(session_total, 2),
        "sum_setup_s": round(setup_total, 2),
        "sum_pytest_s": round(pytest_total, 2),
        "overhead_s": round(wall - pytest_total, 2),
        "pytest_fraction": round(pytest_total / wall, 3) if wall else None,
        "sessions": sessions,
        "sessions_without_pytest_summary": [s["name"] for s in sessions
                                            if s["pytest_s"] is None and s["status"] != "skipped"],
    }


@contextlib.contextmanager
def checkout(ref: str | None):
    """ROOT, or a temporary detached git worktree of ``ref`` (removed afterwards)."""
    if not ref:
        yield ROOT
        return
    tmp = Path(tempfile.mkdtemp(prefix="matrix-time-ref-"))
    tree = tmp / "tree"
    subprocess.run(["git", "worktree", "add", "--detach", "--quiet", str(tree), ref], cwd=ROOT, check=True)
    try:
        yield tree
    finally:
        subprocess.run(["git", "worktree", "remove", "--force", str(tree)], cwd=ROOT, check=False)
        shutil.rmtree(tmp, ignore_errors=True)


def print_table(record: dict) -> None:
    print(f"{'session':<16} {'status':<8} {'wall s':>7} {'setup s':>8} {'pytest s':>9} {'ran':>5} {'skip':>5} "
          f"{'collected':>9}")
    for s in record["sessions"]:
        cells = [s["wall_s"], s["setup_s"], s["pytest_s"], s["tests_ran"], s["tests_skipped"], s["tests_collected"]]
        wall, setup, pytest_s, ran, skipped, collected = ("-" if c is None else c for c in cells)
        print(f"{s['name']:<16} {s['status'] or '-':<8} {wall:>7} {setup:>8} {pytest_s:>9} {ran:>5} {skipped:>5} "
              f"{collected:>9}")
    print(f"{'total':<16} {'':<8} {record['wall_s']:>7} {record['sum_setup_s']:>8} {record['sum_pytest_s']:>9} "
          f"{record['tests_ran']:>5} {'':>5} {record['tests_collected']:>9}   (CPU {record['cpu_s']} s)")


def _version(cmd) -> str | None:
    try:
        out = subprocess.run(cmd, capture_output=True, text=True, check=False, timeout=60)
        return (out.stdout or out.stderr).strip().splitlines()[-1] if (out.stdout or out.stderr) else None
    except (OSError, subprocess.TimeoutExpired):
        return None


def main(argv=None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    posargs: list[str] = []
    if "--" in argv:
        i = argv.index("--")
        argv, posargs = argv[:i], argv[i + 1:]
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mode", choices=["warm", "cold", "both"], default="warm",
                    help="cold removes .nox and the uv cache first; both = cold then warm")
    ap.add_argument("-s", "--session", action="append", default=[], help="nox session (repeatable)")
    ap.add_argument("-t", "--tag", action="append", default=[], help="nox tag (repeatable; default: cpu)")
    ap.add_argument("--uv-cache", type=Path, default=DEFAULT_CACHE)
    ap.add_argument("--output", type=Path, default=RESULTS)
    ap.add_argument("--label", help="store the record under this name instead of the mode's")
    ap.add_argument("--ref", help="run the noxfile and tests of this git revision (a temporary worktree) on "
                                  "--envdir's venvs, e.g. to measure before/after a change")
    ap.add_argument("--jobs", "-j", type=int, default=1, help="nox -j: sessions side by side (default 1)")
    ap.add_argument("--envdir", type=Path, default=ROOT / ".nox",
                    help="nox --envdir; cold removes it (use a separate one while others run nox here)")
    args = ap.parse_args(argv)

    selection: list[str] = []
    if args.session:
        selection += ["-s", *args.session]
    if args.tag or not args.session:
        selection += ["-t", *(args.tag or ["cpu"])]
    modes = ["cold", "warm"] if args.mode == "both" else [args.mode]

    data = {}
    if args.output.exists():
        try:
            data = json.loads(args.output.read_text())
        except ValueError:
            data = {}
    data.setdefault("runs", {})
    data["machine"] = {
        "cpus": os.cpu_count(),
        "python": platform.python_version(),
        "platform": platform.platform(),
        "nox": _version(["nox", "--version"]),
        "uv": _version(["uv", "--version"]),
        "load_average_at_start": list(os.getloadavg()) if hasattr(os, "getloadavg") else None,
    }
    code = 0
    for mode in modes:
        with checkout(args.ref) as tree:
            record = run_once(mode, selection, posargs, args.uv_cache.expanduser().resolve(),
                              args.envdir.expanduser().resolve(), jobs=args.jobs, tree=tree)
        record["ref"] = args.ref or "working tree"
        data["runs"][args.label or mode] = record
        code = code or record["exit_code"]
        args.output.parent.mkdir(parents=True, exist_ok=True)
        args.output.write_text(json.dumps(data, indent=2) + "\n")
        print_table(record)
        print(f"matrix_time: {mode}: wall {record['wall_s']} s, CPU {record['cpu_s']} s, pytest "
              f"{record['sum_pytest_s']} s, setup {record['sum_setup_s']} s over {len(record['sessions'])} sessions, "
              f"{record['tests_ran']} tests ran; load {record['load_average_before']} -> "
              f"{record['load_average_after']} (exit {record['exit_code']}) -> {args.output}", file=sys.stderr)
    return code


if __name__ == "__main__":
    sys.exit(main())
