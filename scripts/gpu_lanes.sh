#!/usr/bin/env bash
# A multi-GPU session (device kinds nvidia-h200-x2 / -x4): build once, then up to four lanes of
# gpu_session.sh steps side by side, one GPU each, so a long step (mutants, certify) does not
# wait for another. Usage: LANE0="shards" LANE1="bench mutants" ... OUT=... scripts/gpu_lanes.sh
# Logs: $OUT/build, $OUT/gpu<N> (each packed by gpu_session.sh); lane outputs last.
set -uo pipefail
OUT=${OUT:-/tmp/gpu-out}; mkdir -p "$OUT"
OUT=$OUT/build bash scripts/gpu_session.sh build || exit 1
declare -A PID
for lane in 0 1 2 3; do
  steps_var=LANE$lane
  [ -n "${!steps_var:-}" ] || continue
  (CUDA_VISIBLE_DEVICES=$lane OUT=$OUT/gpu$lane bash scripts/gpu_session.sh ${!steps_var} > "$OUT/gpu$lane.txt" 2>&1) &
  PID[$lane]=$!
done
rc=0
for lane in "${!PID[@]}"; do wait ${PID[$lane]} || rc=1; done
for lane in 0 1 2 3; do
  if [ -f "$OUT/gpu$lane.txt" ]; then echo; echo "##### GPU $lane: $(eval echo \$LANE$lane)"; cat "$OUT/gpu$lane.txt"; fi
done
# A lane fails when any of its steps failed (gpu_session.sh's exit status); each step's own status is
# in the lane's summary.txt.
exit $rc
