#!/usr/bin/env bash
# Session 20 call 1: rmsnorm-timeline (bench/timeline_probe.cu) built here with nvcc alone, per-block
# stamps of fwd.block_row's plain bf16 kernel beside a row copy and a memcpy, twice.
set -u
OUT=${OUT:-/tmp/out}; t0=$(date +%s)
el() { echo "[$(( $(date +%s) - t0 ))s] $*"; }
nvcc -std=c++17 -O3 -I kernels/include -I kernels/cuda -gencode=arch=compute_90,code=sm_90 --expt-relaxed-constexpr \
  -o /tmp/tl bench/timeline_probe.cu || { echo build failed; exit 1; }
el built
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu --format=csv,noheader
S=4096x8192,3960x8192,8192x4096,4096x16384,32768x8192,16384x4096
/tmp/tl --shapes $S --csv $OUT/stamps1.csv > $OUT/run1.txt 2>&1; el "run1 rc=$?"
/tmp/tl --shapes $S --csv $OUT/stamps2.csv > $OUT/run2.txt 2>&1; el "run2 rc=$?"
cat $OUT/run1.txt; echo ---; grep -E "^events|^ratio" $OUT/run2.txt
cd $OUT && xz -9 stamps1.csv stamps2.csv; ls -la
