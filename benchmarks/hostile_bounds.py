"""Time and peak memory of every bounded case of the hostile-input catalogue, each under ``/usr/bin/time -v``.

The CLI cases are the ``r2-*`` rows of tests/unit/test_hostile.py's catalogue (built the same way, in a temp dir);
the evaluator cases run a candidate check through ``compat.precheck`` in a child; the parse cases feed
``compat.tooling.pysource.parse_source`` a source just under and just over its caps. Each case is run once (the machine
is shared; these are figures, not asserts): wall seconds and maximum resident set size as ``time -v`` reports
them, for the child process only. Writes benchmarks/results/hostile_bounds.json and .md.

    python -m benchmarks.hostile_bounds [NAME_SUBSTRING]
"""
from __future__ import annotations

import json
import os
import platform
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from tools.siblings import load_file

ROOT = Path(__file__).resolve().parent.parent
# tests/unit's catalogue, whose modules import their siblings by bare name (as pytest's rootdir mode lets them)
H = load_file(ROOT / "tests" / "unit" / "hostile_inputs.py")
T = load_file(ROOT / "tests" / "unit" / "test_hostile.py")

OUT = ROOT / "benchmarks" / "results" / "hostile_bounds.json"
TIME = "/usr/bin/time"
LIMITS = {"seconds": 5.0, "max_rss_mib": 500.0}

PARSE_CASES = {  # source expression (evaluated in the child) -> what it probes
    "parse-largest-under-token-cap": "'a;' * 99_000",
    "parse-just-over-token-cap": "'a;' * 100_001",
    "parse-8-mib-member": "'x = 1\\n' * 1_390_000",
    "parse-hex-literal-past-digit-limit": "'x = 0x' + 'f' * 4000",
    "parse-budget-of-one-source": "'a;' * 99_000",  # parsed through one SourceBudget until it is spent
}
PARSE_PROGRAM = """
from compat.tooling.pysource import SourceBudget, parse_source, CandidateError
source, budget = ({expr}).encode(), SourceBudget()
try:
    for i in range({times}):
        parse_source(source, f"m{{i}}.py", budget)
    print("parsed")
except CandidateError as exc:
    print("refused:", exc)
"""


def timed(argv: list[str], cwd: Path) -> dict:
    # the checkout, and tests/unit for PRECHECK_PROGRAM's hostile_inputs
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), str(ROOT / "tests" / "unit")]),
           "PYTHONIOENCODING": "utf-8"}
    proc = subprocess.run([TIME, "-v", *argv], cwd=cwd, env=env, capture_output=True, text=True, timeout=600,
                          stdin=subprocess.DEVNULL)
    stats = dict(re.findall(r"^\s*(.+?): (.+)$", proc.stderr, re.M))
    wall = stats.get("Elapsed (wall clock) time (h:mm:ss or m:ss)", "0:0")
    seconds = sum(float(part) * 60 ** i for i, part in enumerate(reversed(wall.split(":"))))
    own = proc.stderr.split("\tCommand being timed:")[0].strip()  # the child's own stderr, before time's report
    said = own.splitlines()[0] if own else (proc.stdout.strip().splitlines() or [""])[-1]
    cpu = float(stats.get("User time (seconds)", 0)) + float(stats.get("System time (seconds)", 0))
    return {"exit": int(stats.get("Exit status", proc.returncode)), "seconds": round(seconds, 2),
            "cpu_seconds": round(cpu, 2),
            "max_rss_mib": round(int(stats.get("Maximum resident set size (kbytes)", 0)) / 1024, 1),
            "said": said[:160]}


def cases(tmp: Path):
    for name, attack in sorted(T.CATALOGUE.items()):
        if name.startswith("r2-") and attack.build is not None:
            where = tmp / name
            where.mkdir()
            kwargs = attack.build(where)
            yield name, "cli", H.cli_argv(kwargs["args"]), attack.code
    where = tmp / "three-config-files"
    where.mkdir()
    # parsed whole: the report's verdict (0 compatible or 1 review) is not what this case measures
    yield ("gate-three-config-files-under-the-token-cap", "cli",
           H.cli_argv(T._three_dense_config_files(where)["args"]), (0, 1))
    for name, test in sorted(T.EVALUATOR_BOMBS.items()):
        program = H.PRECHECK_PROGRAM.format(source=H.dataclass_with_check(test), value="1")
        yield f"evaluator-{name}", "api", [sys.executable, "-c", program], 0
    program = H.PRECHECK_PROGRAM.format(source=H.dataclass_with_check("self.x * self.x * self.x < 5"),
                                        value="10 ** 200000")
    yield "evaluator-200000-digit-user-int", "api", [sys.executable, "-c", program], 0
    for name, expr in PARSE_CASES.items():
        times = 8 if "budget" in name else 1
        yield name, "api", [sys.executable, "-c", PARSE_PROGRAM.format(expr=expr, times=times)], 0

TEMP_RUN = re.escape(tempfile.gettempdir()) + r"/hostile-bounds-[^/]+/"  # this run's files, as printed


def _codes(expected) -> tuple:
    return tuple(expected) if isinstance(expected, (list, tuple)) else (expected,)


def _cell(text: str) -> str:
    text = re.sub(TEMP_RUN, "TMP/", text)
    return text.replace("|", "\\|").replace("`", "'")[:120]


def main(argv: list[str]) -> int:
    if not shutil.which(TIME):
        sys.exit(f"{TIME} is missing (apt-get install time)")
    wanted = argv[0] if argv else ""
    rows = []
    with tempfile.TemporaryDirectory(prefix="hostile-bounds-") as tmp:
        for name, kind, command, expected in cases(Path(tmp)):
            if wanted not in name:
                continue
            row = {"case": name, "kind": kind, "expected_exit": expected, **timed(command, ROOT)}
            row["within"] = row["seconds"] <= LIMITS["seconds"] and row["max_rss_mib"] <= LIMITS["max_rss_mib"]
            row["said"] = re.sub(TEMP_RUN, "TMP/", row["said"])
            rows.append(row)
            print(f"{name:50} exit {row['exit']} {row['seconds']:6.2f} s {row['cpu_seconds']:6.2f} cpu-s "
                  f"{row['max_rss_mib']:7.1f} MiB  "
                  f"{row['said'][:70]}", flush=True)
    result = {"about": __doc__.splitlines()[0], "limits": LIMITS, "python": platform.python_version(),
              "cpus": os.cpu_count(), "load_average": [round(x, 2) for x in os.getloadavg()], "cases": rows,
              "all_within": all(r["within"] for r in rows),
              "all_exits_as_expected": all(r["exit"] in _codes(r["expected_exit"]) for r in rows)}
    if not wanted:
        OUT.write_text(json.dumps(result, indent=1) + "\n")
        lines = ["# Bounded cases: wall time and peak memory (`/usr/bin/time -v`, one run each)", "",
                 "Reproduce: `python -m benchmarks.hostile_bounds [CASE]`.", "",
                 f"Limits: {LIMITS['seconds']} s and {LIMITS['max_rss_mib']:.0f} MiB per case. Python "
                 f"{result['python']}, {result['cpus']} CPUs shared, load average {result['load_average']}.", "",
                 "| case | exit (expected) | wall s | CPU s | peak MiB | within | what it said |",
                 "|---|---|---|---|---|---|---|"]
        lines += [f"| {r['case']} | {r['exit']} ({r['expected_exit']}) | {r['seconds']} | {r['cpu_seconds']} | "
                  f"{r['max_rss_mib']} | "
                  f"{'yes' if r['within'] else 'NO'} | {_cell(r['said'])} |" for r in rows]
        OUT.with_suffix(".md").write_text("\n".join(lines) + "\n")
    return 0 if result["all_within"] and result["all_exits_as_expected"] else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
