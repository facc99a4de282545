"""False refusals of the hostile-input bounds on real releases: every cached megatron-core wheel (the download cache,
``compat.tooling.fetch.cache_dir()``), gated against its own registry release and parsed whole through one SourceBudget.

A real release must gate COMPATIBLE against itself (the archive rules, parse caps and folding bounds change nothing
it holds) and every one of its ``.py`` files must parse within the caps (what the surface model will spend). The
releases used to size the caps (0.15.0, 0.15.1, 0.15.2, 0.18.0: the development set) are reported apart from the
rest (the evaluation set). Writes benchmarks/results/real_release_bounds.json and .md.
"""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
from compat.errors import CandidateError  # noqa: E402
from compat.tooling.archive import open_source  # noqa: E402
from compat.tooling.fetch import cache_dir  # noqa: E402
from compat.tooling.pysource import SourceBudget, parse_source, size_of  # noqa: E402

OUT = ROOT / "benchmarks" / "results" / "real_release_bounds.json"
DEVELOPMENT = {"0.15.0", "0.15.1", "0.15.2", "0.18.0"}
_VERSION = re.compile(r"megatron_core-([0-9.]+)-")


def gate_self(wheel: Path, version: str) -> int:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.run([sys.executable, "-m", "compat", "gate", str(wheel), "--against", version], cwd=ROOT,
                          env=env, capture_output=True, text=True, timeout=600)
    return proc.returncode


def parse_all(wheel: Path) -> dict:
    source, budget = open_source(wheel), SourceBudget()
    files, largest, refused = 0, 0, None
    start = time.process_time()
    try:
        for name in source.python_files():
            data = source.read_relative(name)
            largest = max(largest, size_of(data))
            parse_source(data, name, budget)
            files += 1
    except CandidateError as exc:
        refused = str(exc)
    return {"files": files, "bytes": budget.bytes, "nodes": budget.nodes, "largest_file_tokens": largest,
            "parse_cpu_seconds": round(time.process_time() - start, 2), "refused": refused}


def main() -> int:
    wheels = {}
    for path in sorted(cache_dir().glob("megatron_core-*.whl")):
        match = _VERSION.match(path.name)
        if match:
            wheels.setdefault(match.group(1), path)
    rows = []
    for version, wheel in sorted(wheels.items(), key=lambda kv: tuple(int(x) for x in kv[0].split("."))):
        row = {"version": version, "set": "development" if version in DEVELOPMENT else "evaluation",
               "gate_exit_against_itself": gate_self(wheel, version), **parse_all(wheel)}
        rows.append(row)
        print(json.dumps(row), flush=True)
    summary = {}
    for part in ("development", "evaluation"):
        mine = [r for r in rows if r["set"] == part]
        summary[part] = {"releases": len(mine),
                         "gate_not_compatible": [r["version"] for r in mine if r["gate_exit_against_itself"] != 0],
                         "parse_refused": [r["version"] for r in mine if r["refused"]],
                         "max_nodes": max((r["nodes"] for r in mine), default=0),
                         "max_file_tokens": max((r["largest_file_tokens"] for r in mine), default=0)}
    result = {"about": __doc__.splitlines()[0], "summary": summary, "releases": rows}
    OUT.write_text(json.dumps(result, indent=1) + "\n")
    lines = ["# Real releases under the hostile-input bounds", "",
             "Reproduce: `python -m benchmarks.real_release_bounds`.", "",
             "| set | releases | not COMPATIBLE against itself | parse refused | most nodes (cap 1.6 M) | "
             "largest file tokens (cap 200,000) |", "|---|---|---|---|---|---|"]
    lines += [f"| {part} | {s['releases']} | {len(s['gate_not_compatible'])} {s['gate_not_compatible'] or ''} | "
              f"{len(s['parse_refused'])} {s['parse_refused'] or ''} | {s['max_nodes']} | {s['max_file_tokens']} |"
              for part, s in summary.items()]
    lines += ["", "| release | set | gate exit | files | bytes | nodes | largest file tokens | parse CPU s |",
              "|---|---|---|---|---|---|---|---|"]
    lines += [f"| {r['version']} | {r['set']} | {r['gate_exit_against_itself']} | {r['files']} | {r['bytes']} | "
              f"{r['nodes']} | {r['largest_file_tokens']} | {r['parse_cpu_seconds']} |" for r in rows]
    OUT.with_suffix(".md").write_text("\n".join(lines) + "\n")
    return 0 if all(not s["gate_not_compatible"] and not s["parse_refused"] for s in summary.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
