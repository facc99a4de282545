"""Wall time of `python -m compat gate megatron-core==0.19.2`: cold (empty download cache) and warm.

The cache is redirected with MCORE_COMPAT_CACHE to a fresh temp dir, so the cold run really downloads the
~2.5 MB wheel (compat.tooling.fetch, standard library); warm runs find it in that cache. Writes benchmarks/results/gate_time.json.
"""
from __future__ import annotations

import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
from compat.tooling import fetch  # noqa: E402

CANDIDATE = "megatron-core==0.19.2"
OUT = ROOT / "benchmarks" / "results" / "gate_time.json"


def timed(cache: Path) -> tuple[float, int]:
    env = {**os.environ, "MCORE_COMPAT_CACHE": str(cache), "PYTHONPATH": str(ROOT)}
    start = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "compat", "gate", CANDIDATE], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=600)
    elapsed = time.perf_counter() - start
    if proc.returncode not in (0, 1):
        sys.exit(f"gate failed ({proc.returncode}): {proc.stderr.strip()}")
    return elapsed, proc.returncode


def main(cold_runs: int = 3, warm_runs: int = 5) -> dict:
    load_before = [round(x, 2) for x in os.getloadavg()]
    cold, warm, codes = [], [], set()
    for _ in range(cold_runs):
        with tempfile.TemporaryDirectory(prefix="gate-cold-") as tmp:
            seconds, code = timed(Path(tmp))
            cold.append(seconds)
            codes.add(code)
    with tempfile.TemporaryDirectory(prefix="gate-warm-") as tmp:
        timed(Path(tmp))  # fill the cache
        wheel_bytes = sum(w.stat().st_size for w in (Path(tmp) / "wheels").glob("*.whl"))
        for _ in range(warm_runs):
            seconds, code = timed(Path(tmp))
            warm.append(seconds)
            codes.add(code)
    result = {
        "candidate": CANDIDATE, "exit_codes": sorted(codes), "wheel_bytes": wheel_bytes,
        "cold_s": {"runs": [round(s, 3) for s in cold], "median": round(statistics.median(cold), 3)},
        "warm_s": {"runs": [round(s, 3) for s in warm], "median": round(statistics.median(warm), 3)},
        "python": platform.python_version(), "machine": platform.machine(), "cpus": os.cpu_count(),
        "index": fetch.index_url(),
        "measured_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "load_average_before": load_before, "load_average_after": [round(x, 2) for x in os.getloadavg()],
        "bytecode": f"as the environment has it (PYTHONDONTWRITEBYTECODE={os.environ.get('PYTHONDONTWRITEBYTECODE')})",
        "note": "subprocess wall time, interpreter start included; cold = fresh MCORE_COMPAT_CACHE (download from the index)",
    }
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(json.dumps(result, indent=1) + "\n", encoding="utf-8")
    return result


if __name__ == "__main__":
    print(json.dumps(main(), indent=1))
