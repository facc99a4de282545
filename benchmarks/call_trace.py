"""How much back and forth one call makes, and what it costs: Python calls, switches between modules, version
parses and version matches, and the wall time of the first call, for this checkout and for git revisions.

Each figure comes from a fresh interpreter; ``import compat`` is done before tracing starts, so the first call
pays what a training job's first call pays (loading the registry, building the canonical view, matching the
version). A module switch is a call whose callee lives in another module than its caller. The first call also
runs the standard library's import machinery and class builders (importlib, dataclasses, re, typing) for the
modules it loads; a training job has most of those loaded already, so the calls made in compat's own modules and
the switches between them are counted apart. A version parse is a ``packaging.version.Version`` made from a
string; a version match is a call of ``compat.version.match_release`` (a version placed among the registry's
releases). The wall time of a first call is untraced, the median of ``--runs`` fresh processes, bytecode compiled.

    python -m benchmarks.call_trace --ref 5847d67 --out benchmarks/results/call_trace.json
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

CALLS = {
    "first ddp_kwargs": "compat.ddp_kwargs({'use_distributed_optimizer': True, 'overlap_grad_reduce': True}, "
                        "{'optimizer': 'adam', 'bf16': True}, version='0.19.2', dtype_format='str')",
    "first resolve_configs": "compat.resolve_configs(ddp={'use_distributed_optimizer': True}, "
                             "optimizer={'optimizer': 'adam', 'bf16': True}, "
                             "transformer={'num_layers': 2, 'hidden_size': 64, 'num_attention_heads': 4}, "
                             "version='0.19.2')",
}

_TRACE = r"""
import json, os, sys
import compat
counts = {"calls": 0, "calls_in_compat": 0, "module_switches": 0, "switches_within_compat": 0,
          "version_parses": 0, "version_matches": 0}
PARSE = (os.path.join("packaging", "version.py"), "__init__")
MATCH = (os.path.join("compat", "version.py"), "match_release")
def profile(frame, event, arg):
    if event != "call":
        return
    counts["calls"] += 1
    module = frame.f_globals.get("__name__") or ""
    ours = module.startswith("compat")
    counts["calls_in_compat"] += ours
    caller = frame.f_back
    if caller is not None and caller.f_globals.get("__name__") != module:
        counts["module_switches"] += 1
        counts["switches_within_compat"] += ours and (caller.f_globals.get("__name__") or "").startswith("compat")
    code = frame.f_code
    where = (os.path.join(*code.co_filename.split(os.sep)[-2:]), code.co_name)
    if where == PARSE:
        counts["version_parses"] += 1
    elif where == MATCH:
        counts["version_matches"] += 1
if sys.argv[2] == "second":
    eval(sys.argv[1])
sys.setprofile(profile)
eval(sys.argv[1])
sys.setprofile(None)
print(json.dumps(counts))
"""

_TIME = r"""
import sys, time
import compat
start = time.perf_counter()
eval(sys.argv[1])
print(time.perf_counter() - start)
"""


def _env(tree: Path | None) -> dict:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    if tree is not None:
        env["PYTHONPATH"] = str(tree)
    return env


def _run(code: str, args: list[str], tree: Path | None) -> str:
    proc = subprocess.run([sys.executable, "-c", code, *args], env=_env(tree), cwd=tree or Path.cwd(),
                          capture_output=True, text=True, timeout=300)
    if proc.returncode != 0:
        sys.exit(f"call_trace: {args[0][:60]!r} failed: {proc.stderr.strip()[-500:]}")
    return proc.stdout.strip().splitlines()[-1]


def measure(tree: Path | None, runs: int) -> dict:
    out = {}
    for name, expression in CALLS.items():
        _run(_TIME, [expression], tree)  # compiles the bytecode the timed runs use
        times = [float(_run(_TIME, [expression], tree)) * 1000 for _ in range(runs)]
        out[name] = {"first": json.loads(_run(_TRACE, [expression, "first"], tree)),
                     "second": json.loads(_run(_TRACE, [expression, "second"], tree)),
                     "first_call_ms_median": round(statistics.median(times), 2),
                     "first_call_ms_runs": [round(t, 2) for t in times]}
    return out


def export_ref(ref: str, dest: Path) -> Path:
    """The ``compat`` package as of git revision ``ref``, unpacked under ``dest``."""
    archive = subprocess.run(["git", "archive", "--format=tar", ref, "compat"], capture_output=True, check=True)
    dest.mkdir(parents=True)
    tar = dest / "compat.tar"
    tar.write_bytes(archive.stdout)
    with tarfile.open(tar) as t:
        t.extractall(dest, filter="data")
    return dest


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ref", action="append", default=[], help="also measure compat/ at this git revision")
    parser.add_argument("--runs", type=int, default=15)
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args(argv)
    load = os.getloadavg()
    with tempfile.TemporaryDirectory(prefix="call-trace-") as tmp:
        columns = {f"git {ref}": measure(export_ref(ref, Path(tmp) / ref.replace("/", "_")), args.runs)
                   for ref in args.ref}
        columns["this checkout"] = measure(None, args.runs)
    data = {"calls": CALLS, "columns": columns, "load_before": [round(x, 2) for x in load],
            "load_after": [round(x, 2) for x in os.getloadavg()], "python": sys.version.split()[0]}
    tmp_out = args.out.with_suffix(".tmp")
    tmp_out.write_text(json.dumps(data, indent=1) + "\n", encoding="utf-8")
    tmp_out.replace(args.out)
    for label, figures in columns.items():
        for name, f in figures.items():
            print(f"{label:16} {name:22} first {f['first']} {f['first_call_ms_median']} ms; second {f['second']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
