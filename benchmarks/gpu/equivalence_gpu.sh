#!/bin/bash
# Device check (run once on a CUDA machine, from the repo root, with the pins' wheels in .whl/ as for
# run_pins.sh): every pin of the equivalence lane and the nccl DDP test, with ranks launched by torchrun, world size =
# the GPUs present (at least 1). Without CUDA it says so and exits 0 (nothing to measure).
#   - equivalence lane: `tests/equiv/lane.py pin --backend nccl --torchrun --world-size $NGPU` per pin, then
#     `lane.py compare --backend nccl`: benchmarks/results/equivalence_nccl.{json,md} (copied to $OUT)
#   - nccl DDP: `torchrun --standalone --nproc_per_node=$NGPU -m pytest tests/integration/test_ddp_nccl.py`
# PINS='0.16.1|0.19.2' limits the run. Logs: $OUT/equivalence_gpu_logs.txt.
set -u
export SCRATCH=${SCRATCH:-$(mktemp -d)}   # unpacked wheels and per-pin results; $OUT gets what is kept
OUT=${OUT:-$SCRATCH/gpu-out}
mkdir -p "$OUT"
LOG="$OUT/equivalence_gpu_logs.txt"
: > "$LOG"
NGPU=$(python3 -c "import torch; print(torch.cuda.device_count() if torch.cuda.is_available() else 0)" 2>/dev/null || echo 0)
if [ "$NGPU" -lt 1 ]; then
  echo "SKIP: no CUDA device (torch.cuda.device_count() is 0): the nccl lanes need a GPU" | tee -a "$LOG"
  exit 0
fi
nvidia-smi -L | tee -a "$LOG"
python3 -m zipfile -e .whl/setuptools-*.whl $SCRATCH/st >/dev/null 2>&1
for w in .whl/megatron_core-*.whl; do
  v=$(basename "$w" | cut -d- -f2)
  [ -d "$SCRATCH/mc/$v" ] || python3 -m zipfile -e "$w" "$SCRATCH/mc/$v"
done
export MCORE_COMPAT_EQUIV_WORK=$SCRATCH/equiv-nccl OMP_NUM_THREADS=1
LANE=$(PYTHONPATH=".:tests/equiv" python3 -c "import lane; print(' '.join(lane.lane_versions()))")
for v in $LANE; do
  echo "$v" | grep -qE "^(${PINS:-.*})$" || continue
  [ -d "$SCRATCH/mc/$v" ] || { echo "== $v: no wheel in .whl/" | tee -a "$LOG"; continue; }
  extra=""
  grep -q pkg_resources "$SCRATCH/mc/$v/megatron/core/tensor_parallel/random.py" 2>/dev/null && extra=":$SCRATCH/st"
  start=$(date +%s)
  PYTHONPATH="$SCRATCH/mc/$v$extra:$PWD" timeout 420 python3 tests/equiv/lane.py pin --version "$v" --python python3 \
    --backend nccl --torchrun --world-size "$NGPU" >> "$LOG" 2>&1
  echo "== equiv $v rc=$? wall=$(( $(date +%s) - start ))s" | tee -a "$LOG"
  start=$(date +%s)
  PYTHONPATH="$SCRATCH/mc/$v$extra:$PWD" timeout 420 python3 -m torch.distributed.run --standalone \
    --nproc_per_node="$NGPU" -m pytest tests/integration/test_ddp_nccl.py -q -p no:cacheprovider -rs -W ignore \
    >> "$LOG" 2>&1
  echo "== ddp-nccl $v rc=$? wall=$(( $(date +%s) - start ))s" | tee -a "$LOG"
done
PYTHONPATH="$PWD" python3 tests/equiv/lane.py compare --backend nccl >> "$LOG" 2>&1
echo "== compare rc=$?" | tee -a "$LOG"
cp benchmarks/results/equivalence_nccl.json benchmarks/results/equivalence_nccl.md "$OUT"/ 2>/dev/null
exit 0
