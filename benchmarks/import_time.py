"""What `import compat` (and the first use of its main entry points) costs, in fresh processes.

    python -m benchmarks.import_time                     # this checkout, 25 runs per statement
    python -m benchmarks.import_time --ref c4bd041       # also a git revision (e.g. before a change)
    python -m benchmarks.import_time --runs 50 --python /path/to/python

Each statement runs in a new interpreter with ``-X importtime``; the figure is the import time the statement
adds on top of interpreter start-up (the summed cumulative time of the top-level imports that ``-c pass`` does
not make), median over the runs, plus the wall time over ``-c pass``. Bytecode is compiled first and the runs
use it (PYTHONDONTWRITEBYTECODE, set in some environments, is removed for them: without .pyc files every
import also compiles). Writes benchmarks/results/import_time.json and prints a table; records the load average.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "benchmarks" / "results" / "import_time.json"
STATEMENTS = {
    "import compat": "import compat",
    "+ resolve_ddp_overrides (verl drop-in)": "import compat; compat.resolve_ddp_overrides",
    "+ ddp_kwargs (registry path)": "import compat; compat.ddp_kwargs",
    "CLI modules (python -m compat)": "import compat.tooling.cli",
}


def _env(tree: Path) -> dict:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONDONTWRITEBYTECODE", "PYTHONPROFILEIMPORTTIME")}
    env["PYTHONPATH"] = str(tree)
    return env


def _importtime(python: str, code: str, tree: Path) -> tuple[dict[str, int], float]:
    """Top-level imports -> cumulative microseconds, and the wall time of the whole process."""
    start = time.perf_counter()
    proc = subprocess.run([python, "-X", "importtime", "-c", code], env=_env(tree), cwd=tree,
                          capture_output=True, text=True, timeout=120)
    wall = time.perf_counter() - start
    if proc.returncode != 0:
        sys.exit(f"import_time: {code!r} failed: {proc.stderr.strip()[-500:]}")
    top = {}
    for line in proc.stderr.splitlines():
        if not line.startswith("import time:") or "|" not in line:
            continue
        _self, cumulative, name = line.removeprefix("import time:").split("|")
        if not name.startswith(" ") or name.startswith("  "):
            continue  # nested: already inside a top-level entry's cumulative time
        if cumulative.strip().isdigit():
            top[name.strip()] = int(cumulative)
    return top, wall


def export_ref(ref: str, dest: Path) -> Path:
    """The ``compat`` package as of git revision ``ref``, unpacked under ``dest``."""
    archive = subprocess.run(["git", "archive", "--format=tar", ref, "compat"], cwd=ROOT, capture_output=True,
                             check=True).stdout
    dest.mkdir(parents=True)
    tar_path = dest / "tree.tar"
    tar_path.write_bytes(archive)
    with tarfile.open(tar_path) as tar:
        tar.extractall(dest, filter="data")
    return dest


def measure(python: str, trees: dict[str, Path], runs: int) -> dict:
    for label, tree in trees.items():  # compile bytecode, and check that PYTHONPATH wins over any install
        env = _env(tree)
        subprocess.run([python, "-m", "compileall", "-q", str(tree / "compat")], env=env, cwd=tree, check=True)
        where = subprocess.run([python, "-c", "import compat; print(compat.__file__)"], env=env, cwd=tree,
                               check=True, capture_output=True, text=True).stdout.strip()
        if not Path(where).resolve().is_relative_to(tree.resolve()):
            sys.exit(f"import_time: {label}: `import compat` found {where}, not the tree under test")
    first = next(iter(trees.values()))
    base_modules, _ = _importtime(python, "pass", first)
    samples = {label: {name: {"import_us": [], "wall_s": []} for name in STATEMENTS} for label in trees}
    base_walls = []
    for _ in range(runs):  # interleaved, so that a burst of load hits every statement alike
        base_walls.append(_importtime(python, "pass", first)[1])
        for label, tree in trees.items():
            for name, code in STATEMENTS.items():
                top, wall = _importtime(python, code, tree)
                samples[label][name]["import_us"].append(sum(v for k, v in top.items() if k not in base_modules))
                samples[label][name]["wall_s"].append(wall)
    base_wall = statistics.median(base_walls)
    results = {}
    for label in trees:
        results[label] = {}
        for name, s in samples[label].items():
            results[label][name] = {
                "statement": STATEMENTS[name],
                "import_ms_median": round(statistics.median(s["import_us"]) / 1000, 2),
                "import_ms_min": round(min(s["import_us"]) / 1000, 2),
                "wall_ms_over_python_median": round((statistics.median(s["wall_s"]) - base_wall) * 1000, 1),
            }
    return {"baseline_python_start_ms_median": round(base_wall * 1000, 1), "results": results}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=25)
    ap.add_argument("--ref", action="append", default=[], help="also measure compat/ at this git revision")
    ap.add_argument("--python", default=sys.executable, help="interpreter (needs packaging)")
    ap.add_argument("--output", type=Path, default=OUT)
    args = ap.parse_args(argv)

    load_before = os.getloadavg()
    with tempfile.TemporaryDirectory(prefix="import-time-") as tmp:
        trees = {}
        for ref in args.ref:
            trees[f"git {ref}"] = export_ref(ref, Path(tmp) / ref.replace("/", "_"))
        trees["working tree"] = ROOT
        data = measure(args.python, trees, args.runs)
    data.update({
        "runs": args.runs,
        "python": subprocess.run([args.python, "-c", "import platform; print(platform.python_version())"],
                                 capture_output=True, text=True).stdout.strip(),
        "machine": platform.machine(), "cpus": os.cpu_count(),
        "load_average_before": [round(x, 2) for x in load_before],
        "load_average_after": [round(x, 2) for x in os.getloadavg()],
        "bytecode": "compiled first (compileall); runs without PYTHONDONTWRITEBYTECODE",
        "measured_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "method": "fresh process per run with -X importtime; import_ms = summed cumulative time of the top-level "
                  "imports that `python -c pass` does not make; wall = process wall time minus `-c pass`'s",
    })
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(json.dumps(data, indent=1) + "\n", encoding="utf-8")

    width = max(len(n) for n in STATEMENTS)
    print(f"{'tree':<14} {'statement':<{width}}  import ms (median/min)  wall ms over python")
    for label, rows in data["results"].items():
        for name, r in rows.items():
            print(f"{label:<14} {name:<{width}}  {r['import_ms_median']:>8.2f} / {r['import_ms_min']:<8.2f}"
                  f"     {r['wall_ms_over_python_median']:>8.1f}")
    print(f"python start-up {data['baseline_python_start_ms_median']} ms; load average before "
          f"{data['load_average_before']}, after {data['load_average_after']}; -> {args.output}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
