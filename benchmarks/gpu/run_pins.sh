#!/bin/bash
# Device check (run once on a GPU machine, from the repo root, with the pins' wheels in .whl/):
# for every pin, the nccl DDP test (tests/integration/test_ddp_nccl.py) and the contract tests, 4 pins at a
# time on the one GPU. Results: $OUT/gpu_results.json (per pin: exit code, wall time, pytest summary and the
# harness report with torch.cuda.max_memory_allocated across step()) and $OUT/gpu_logs.txt.
# PINS='0.16.1|0.19.2' limits the run.
set -u
export SCRATCH=${SCRATCH:-$(mktemp -d)}   # unpacked wheels and per-pin results; $OUT gets what is kept
OUT=${OUT:-$SCRATCH/gpu-out}
mkdir -p "$OUT" $SCRATCH/gpu-res
nvidia-smi -L
python3 -c "import sys, torch; print(sys.version.split()[0], torch.__version__, torch.cuda.device_count())"
python3 -m zipfile -e .whl/setuptools-*.whl $SCRATCH/st >/dev/null 2>&1
for w in .whl/megatron_core-*.whl; do
  v=$(basename "$w" | cut -d- -f2)
  python3 -m zipfile -e "$w" "$SCRATCH/mc/$v"   # a cp311 wheel unpacks fine for 3.12: DDP uses no compiled part
done

run_pin() {
  v=$1
  extra=""
  [ -f $SCRATCH/mc/$v/megatron/core/tensor_parallel/random.py ] && grep -q pkg_resources $SCRATCH/mc/$v/megatron/core/tensor_parallel/random.py && extra=":$SCRATCH/st"
  start=$(date +%s)
  PYTHONPATH=$SCRATCH/mc/$v$extra:$PWD OMP_NUM_THREADS=1 HYPOTHESIS_PROFILE=quick MCORE_COMPAT_DDP_TIMEOUT=240 \
    MCORE_COMPAT_DDP_REPORT_GPU=$SCRATCH/gpu-res/report-$v.json \
    timeout 300 python3 -m pytest tests/integration/test_ddp_nccl.py tests/contract -q -p no:cacheprovider -rs \
      -W ignore > $SCRATCH/gpu-res/log-$v.txt 2>&1
  echo "$? $(( $(date +%s) - start ))" > $SCRATCH/gpu-res/rc-$v.txt
  echo "== $v rc=$(cut -d' ' -f1 $SCRATCH/gpu-res/rc-$v.txt) $(tail -1 $SCRATCH/gpu-res/log-$v.txt)"
}
export -f run_pin
ls "$SCRATCH/mc" | sort -V | grep -E "^(${PINS:-.*})$" | xargs -P 4 -I{} bash -c 'run_pin {}'

python3 - "$OUT" <<'PY'
import json, os, pathlib, sys
res, out = pathlib.Path(os.environ["SCRATCH"]) / "gpu-res", pathlib.Path(sys.argv[1])
data, logs = {}, []
for rc in sorted(res.glob("rc-*.txt")):
    v = rc.stem[3:]
    code, wall = rc.read_text().split()
    log = (res / f"log-{v}.txt").read_text(errors="replace")
    report = res / f"report-{v}.json"
    data[v] = {"rc": int(code), "wall_s": int(wall), "summary": log.strip().splitlines()[-1] if log.strip() else "",
               "report": json.loads(report.read_text()) if report.exists() else None}
    logs.append(f"===== {v} rc={code} wall={wall}s\n" + "\n".join(log.splitlines()[-60:]))
(out / "gpu_results.json").write_text(json.dumps(data, indent=1))
(out / "gpu_logs.txt").write_text("\n".join(logs))
PY
