"""Grad-buffer bytes, extra FP32 grad bytes and bytes reduced per step, per pin and per config.

Runs the real-DDP harness (tests/integration/ddp_harness.py: 2 gloo ranks, bf16 3x Linear(64,64)) in each pin's
environment and tabulates the figures; adds the GPU figures (torch.cuda.max_memory_allocated across step())
from benchmarks/results/gpu_pins_raw.json when a device run left them. Figures, not asserts.

    python -m benchmarks.ddp_memory                      # every .nox/mcore-*/ venv
    python -m benchmarks.ddp_memory --venv-root DIR   # venvs named by version
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results"

from compat import version as _v  # noqa: E402

RUN = ("import json, ddp_harness; "  # the harness and the checkout: PYTHONPATH, set by run_pin
       "json.dump(ddp_harness.run_cases(ddp_harness.default_cases()), open({out!r}, 'w'))")


def find_pythons(venv_root: Path | None) -> dict[str, Path]:
    if venv_root is not None:
        found = {p.parent.parent.name: p for p in venv_root.glob("*/bin/python")}
    else:
        found = {p.parent.parent.name.removeprefix("mcore-"): p for p in (ROOT / ".nox").glob("mcore-*/bin/python")}
    return {v: found[v] for v in _v.sorted_versions(found)}


def run_pin(python: Path, out: Path) -> dict:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env["OMP_NUM_THREADS"] = "1"
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT / "tests" / "integration"), str(ROOT),
                                         *filter(None, [env.get("PYTHONPATH")])])
    code = RUN.format(out=str(out))
    subprocess.run([str(python), "-c", code], check=True, env=env, cwd=ROOT, timeout=900)
    return json.loads(out.read_text())


def summarize(report: dict) -> dict:
    rows = {}
    for rank in report["ranks"]:
        for case_id, case in (rank.get("cases") or {}).items():
            if case.get("error"):
                rows.setdefault(case_id, {"error": case["error"].strip().splitlines()[-1]})
                continue
            row = rows.setdefault(case_id, {
                "grad_reduce_in_fp32": case["grad_reduce_in_fp32"],
                "grad_dtype": case["main_grad_dtypes"][0],
                "grad_buffer_bytes": case["grad_buffer_bytes"],
                "reduce_bytes": case["reduce_bytes"],
                "reduce_ops": sorted({c["op"] for c in case["grad_sync_collectives"]}),
                "extra_fp32_grad_bytes": [],
            })
            row["extra_fp32_grad_bytes"].append(case["extra_fp32_grad_bytes"])
            if "cuda_step_peak_delta" in case:
                row["cuda_step_peak_delta"] = case["cuda_step_peak_delta"]
    return rows


def _first_error(cases: dict) -> dict:
    """A GPU rank stops at its first failing case; the later ones share that reason."""
    return next((c for c in cases.values() if "error" in c), {})


def _ratio_line(cpu: dict) -> str:
    ratios = {round(rows[f"resolver-{d}"]["reduce_bytes"] / rows[f"inherited-{d}"]["reduce_bytes"], 3)
              for rows in cpu.values() for d in ("nodistopt", "distopt")
              if "reduce_bytes" in rows.get(f"resolver-{d}", {}) and "reduce_bytes" in rows.get(f"inherited-{d}", {})}
    return f"FP32 reduce / BF16 reduce, bytes per grad sync, over all pins and both optimizer layouts: {sorted(ratios)}."


def markdown(cpu: dict, gpu: dict) -> str:
    lines = ["# DDP memory and communication per pin",
             "",
             "Reproduce: `python -m benchmarks.ddp_memory` (CPU, every pin); the GPU column: "
             "`benchmarks/gpu/run_pins.sh` on a CUDA machine.",
             "",
             "Model: bf16 3x Linear(64,64) (12,480 params) in a MegatronModule; real megatron-core "
             "DistributedDataParallel + get_megatron_optimizer().step(). CPU: 2 gloo ranks (per-rank figures, "
             "rank 0 / rank 1). `resolver` = compat.build_ddp_config with an optimizer (grad_reduce_in_fp32=True); "
             "`inherited` = Megatron's default (False). Reduce bytes: input bytes of the grad-sync collectives "
             "(wrapped torch.distributed calls) in finish_grad_sync(). GPU: one H200, nccl, world size 1 "
             "(one GPU), torch 2.11.0+cu130, Python 3.12; the peak delta is torch.cuda.max_memory_allocated across "
             "step() minus the allocation before it; old pins skip where they need Apex/Transformer Engine on GPU.",
             "",
             _ratio_line(cpu),
             "",
             "| pin | case | grad dtype | grad buffer B | extra FP32 grad B | reduce B (op) | GPU step peak delta B |",
             "|---|---|---|---|---|---|---|"]
    for version in _v.sorted_versions(set(cpu) | set(gpu)):
        for case_id in ("resolver-nodistopt", "inherited-nodistopt", "resolver-distopt", "inherited-distopt"):
            row = cpu.get(version, {}).get(case_id)
            g = gpu.get(version, {}).get(case_id) or _first_error(gpu.get(version, {}))
            peak = g.get("cuda_step_peak_delta", f"skipped: {g['error'][:70]}" if "error" in g else "-")
            if row is None or "error" in row:
                lines.append(f"| {version} | {case_id} | - | - | - | - | {peak} |")
                continue
            extra = " / ".join(f"{b:,}" for b in row["extra_fp32_grad_bytes"])
            lines.append(f"| {version} | {case_id} | {row['grad_dtype']} | {row['grad_buffer_bytes']:,} | {extra} | "
                         f"{row['reduce_bytes']:,} ({', '.join(row['reduce_ops'])}) | {peak} |")
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--venv-root", type=Path, help="directory of venvs named by megatron-core version")
    parser.add_argument("--gpu", type=Path, default=RESULTS / "gpu_pins_raw.json")
    parser.add_argument("--from-raw", action="store_true", help="tabulate raw/gloo-*.json again, run nothing")
    args = parser.parse_args(argv)
    RESULTS.mkdir(parents=True, exist_ok=True)
    raw = RESULTS / "raw"
    raw.mkdir(exist_ok=True)
    cpu = {}
    if args.from_raw:
        for path in raw.glob("gloo-*.json"):
            cpu[path.stem.removeprefix("gloo-")] = summarize(json.loads(path.read_text()))
    for version, python in ({} if args.from_raw else find_pythons(args.venv_root)).items():
        print(f"{version}: {python}", file=sys.stderr)
        cpu[version] = summarize(run_pin(python, raw / f"gloo-{version}.json"))
    cpu = {v: cpu[v] for v in _v.sorted_versions(cpu)}
    gpu = {}
    if args.gpu.exists():
        gpu = {v: summarize(x["report"]) for v, x in json.loads(args.gpu.read_text()).items() if x.get("report")}
    (RESULTS / "ddp_memory.json").write_text(json.dumps({"cpu_gloo_2_ranks": cpu, "gpu_nccl": gpu}, indent=1))
    (RESULTS / "ddp_memory.md").write_text(markdown(cpu, gpu))
    print(markdown(cpu, gpu))
    return 0


if __name__ == "__main__":
    sys.exit(main())
