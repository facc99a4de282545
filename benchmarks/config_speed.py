"""Speed and size of the all-classes registry: `import compat`, `explain --config transformer` as a
whole process, and the registry file.

Bytecode is written first (a warm-up run), then each figure is the median of N runs. The machine is shared: the
load average before and after is recorded next to the figures. Writes benchmarks/results/config_speed.json.
"""
from __future__ import annotations

import json
import os
import platform
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "benchmarks" / "results" / "config_speed.json"
RUNS = 15


def env() -> dict:
    out = {**os.environ, "PYTHONPATH": str(ROOT)}
    out.pop("PYTHONDONTWRITEBYTECODE", None)  # measure what users see: .pyc files written and reused
    return out


def wall(args: list[str]) -> float:
    start = time.perf_counter()
    subprocess.run([sys.executable, *args], cwd=ROOT, env=env(), check=True, capture_output=True)
    return time.perf_counter() - start


def import_us() -> int:
    """`import compat` alone, from -X importtime (cumulative microseconds of the compat line)."""
    proc = subprocess.run([sys.executable, "-X", "importtime", "-c", "import compat"], cwd=ROOT, env=env(),
                          check=True, capture_output=True, text=True)
    line = next(x for x in proc.stderr.splitlines() if x.rstrip().endswith("| compat"))
    return int(line.split("|")[1])


def median(fn, runs: int = RUNS):
    values = [fn() for _ in range(runs)]
    return round(statistics.median(values), 4), [round(v, 4) for v in values]


def main() -> dict:
    load_before = Path("/proc/loadavg").read_text().split()[:3]
    explain = ["-m", "compat", "explain", "--config", "transformer", "--mcore", "0.19.2",
               "--set", "num_layers=2", "--set", "hidden_size=64", "--set", "num_attention_heads=4"]
    wall(explain)  # warm-up: writes the .pyc files
    baseline = median(lambda: wall(["-c", "pass"]))
    imp = median(import_us)
    ex = median(lambda: wall(explain))
    ex_ddp = median(lambda: wall(["-m", "compat", "explain", "--mcore", "0.19.2"]))
    registry = ROOT / "compat" / "data" / "registry.json"
    data = json.loads(registry.read_text(encoding="utf-8"))
    result = {
        "import_compat_ms": round(imp[0] / 1000, 1), "import_compat_runs_us": imp[1],
        "explain_transformer_process_s": ex[0], "explain_transformer_runs_s": ex[1],
        "explain_ddp_process_s": ex_ddp[0], "python_startup_s": baseline[0],
        "registry": {"bytes": registry.stat().st_size, "releases": len(data["releases"]),
                     "class_snapshots": len(data["snapshots"]), "field_records": len(data["fields"]),
                     "check_records": len(data["checks"]),
                     "heads_json_bytes": (ROOT / "compat" / "data" / "heads.json").stat().st_size},
        "loadavg_before": load_before, "loadavg_after": Path("/proc/loadavg").read_text().split()[:3],
        "python": platform.python_version(), "cpus": os.cpu_count(),
        "measured_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "note": f"medians of {RUNS} runs; explain = whole process (interpreter start, imports, registry load, resolve "
                "of TransformerConfig with its 199 checks, printing)",
    }
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(json.dumps(result, indent=1) + "\n", encoding="utf-8")
    return result


if __name__ == "__main__":
    print(json.dumps(main(), indent=1))
