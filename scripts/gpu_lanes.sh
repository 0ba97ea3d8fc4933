#!/usr/bin/env bash
# A two-GPU session (device kind nvidia-h200-x2): build once, then two lanes of gpu_session.sh
# steps side by side, one GPU each, so a long step (mutants, certify) does not wait for another.
# Usage: LANE0="tests bench" LANE1="mutants" OUT=... scripts/gpu_lanes.sh
# Logs: $OUT/build, $OUT/gpu0, $OUT/gpu1 (each packed by gpu_session.sh); lane outputs last.
set -uo pipefail
OUT=${OUT:-/tmp/gpu-out}; mkdir -p "$OUT"
OUT=$OUT/build bash scripts/gpu_session.sh build || exit 1
for lane in 0 1; do
  steps_var=LANE$lane
  [ -n "${!steps_var:-}" ] || continue
  (CUDA_VISIBLE_DEVICES=$lane OUT=$OUT/gpu$lane bash scripts/gpu_session.sh ${!steps_var} > "$OUT/gpu$lane.txt" 2>&1) &
done
wait
for lane in 0 1; do
  [ -f "$OUT/gpu$lane.txt" ] && { echo; echo "##### GPU $lane: $(eval echo \$LANE$lane)"; cat "$OUT/gpu$lane.txt"; }
done
