"""The gate's time against a class's field count: synthetic DDP configs of N fields.

Two shapes per N: "added" (the real 0.19.2 DDPConfig plus N new fields with docs, gated against the registry) and
"renamed" (a registry whose newest DistributedDataParallelConfig has N fields, all renamed in the candidate: N
removed x N added pairs for the rename-likeness search). The candidate is a wheel written to a temp dir and gated
in process (``compat.tooling.gate.gate``: read with ast, diff, report) and, for the largest N, by the CLI.
Writes benchmarks/results/gate_fields.json (with the load average, since the machine is shared).
"""
from __future__ import annotations

import functools
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

from compat import registry_format  # noqa: E402
from compat.configs import DDP_PATH  # noqa: E402
from compat.registry import Registry, registry  # noqa: E402
from compat.tooling import gate as g  # noqa: E402
from compat.tooling.extract import extract_candidate  # noqa: E402

OUT = ROOT / "benchmarks" / "results" / "gate_fields.json"
SIZES = (100, 1_000, 10_000)


def ddp_source(names: list[str], prefix: str) -> str:
    lines = ["from dataclasses import dataclass", "", "@dataclass", "class DistributedDataParallelConfig:"]
    for i, name in enumerate(names):
        lines.append(f"    {name}: int = {i}")
        lines.append(f'    """{prefix} knob number {i} controls bucket {i % 97} of stage {i % 13}."""')
    return "\n".join(lines) + "\n"


def wheel(path: Path, source: str, version: str = "0.20.0") -> Path:
    with zipfile.ZipFile(path, "w") as z:
        z.writestr(f"megatron_core-{version}.dist-info/METADATA",
                   f"Metadata-Version: 2.1\nName: megatron-core\nVersion: {version}\n")
        z.writestr(DDP_PATH, source)
    return path


def timed(fn) -> float:
    start = time.perf_counter()
    fn()
    return round(time.perf_counter() - start, 3)


def main() -> dict:
    real = registry()
    real_names = list(real.schema(real.newest(), config="ddp").names)
    rows = []
    with tempfile.TemporaryDirectory(prefix="gate-fields-") as tmp:
        tmp = Path(tmp)
        for n in SIZES:
            added = wheel(tmp / f"added-{n}.whl", ddp_source(real_names + [f"extra_field_{i}" for i in range(n)],
                                                             "An extra"))
            seconds = timed(functools.partial(g.gate, str(added), real))
            report = g.gate(str(added), real)
            rows.append({"shape": "added", "fields": n, "gate_s": seconds, "changes": len(report.changes)})

            old_names = [f"old_knob_{i}" for i in range(n)]
            base_wheel = wheel(tmp / f"base-{n}.whl", ddp_source(old_names, "An old"), "0.19.9")
            base_data = registry_format.encode([registry_format.release_facts("0.19.9", False, extract_candidate(base_wheel))])
            base = Registry(base_data)
            renamed = wheel(tmp / f"renamed-{n}.whl", ddp_source([f"new_knob_{i}" for i in range(n)], "A new"))
            seconds = timed(functools.partial(g.gate, str(renamed), base))
            report = g.gate(str(renamed), base)
            proposals = sum(1 for c in report.changes if c.proposal)
            rows.append({"shape": "renamed", "fields": n, "gate_s": seconds, "changes": len(report.changes),
                         "rename_proposals": proposals})
            print(rows[-2], rows[-1], flush=True)
        (tmp / "base.json").write_text(registry_format.dumps(base_data), encoding="utf-8")
        cli = []
        for shape, extra in (("added", []), ("renamed", ["--registry", str(tmp / "base.json")])):
            env = {**os.environ, "PYTHONPATH": str(ROOT)}
            start = time.perf_counter()
            proc = subprocess.run([sys.executable, "-m", "compat", "gate", str(tmp / f"{shape}-{SIZES[-1]}.whl"),
                                   *extra], env=env, capture_output=True, text=True, timeout=600)
            cli.append({"shape": shape, "fields": SIZES[-1], "exit_code": proc.returncode,
                        "report_bytes": len(proc.stdout), "wall_s": round(time.perf_counter() - start, 3)})
    result = {"rows": rows, "cli": cli, "loadavg": Path("/proc/loadavg").read_text().split()[:3],
              "python": platform.python_version(), "cpus": os.cpu_count(),
              "measured_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
              "note": "in-process gate (read, diff, classify) per synthetic wheel; 'renamed': every field removed "
                      "and a look-alike added, so the rename search sees N x N pairs without the index. Before the "
                      "fix: 47 s at 10,000 fields."}
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(json.dumps(result, indent=1) + "\n", encoding="utf-8")
    return result


if __name__ == "__main__":
    print(json.dumps(main(), indent=1))
