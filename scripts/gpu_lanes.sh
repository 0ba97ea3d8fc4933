#!/usr/bin/env bash
# A multi-GPU session (device kinds nvidia-h200-x2 / -x4): build once, then up to four lanes of
# gpu_session.sh steps side by side, one GPU each, so a long step (mutants, certify) does not
# wait for another. Usage: LANE0="shards" LANE1="bench mutants" ... OUT=... scripts/gpu_lanes.sh
# Logs: $OUT/build, $OUT/gpu<N> (each packed by gpu_session.sh); lane outputs last.
set -uo pipefail
OUT=${OUT:-/tmp/gpu-out}; mkdir -p "$OUT"
OUT=$OUT/build bash scripts/gpu_session.sh build || exit 1
for lane in 0 1 2 3; do
  steps_var=LANE$lane
  [ -n "${!steps_var:-}" ] || continue
  (CUDA_VISIBLE_DEVICES=$lane OUT=$OUT/gpu$lane bash scripts/gpu_session.sh ${!steps_var} > "$OUT/gpu$lane.txt" 2>&1) &
done
wait
for lane in 0 1 2 3; do
  [ -f "$OUT/gpu$lane.txt" ] && { echo; echo "##### GPU $lane: $(eval echo \$LANE$lane)"; cat "$OUT/gpu$lane.txt"; }
done
