#!/usr/bin/env bash
# Session 20 call 3 (4: the staged form; 5: the first-wave prefetch; 6: 2 and 8 chunks a thread; 7: fewer blocks an SM; 8: the first wave staggered): rmsnorm-timeline with the grid-stride copy kernels (built here with nvcc alone), twice.
set -u
OUT=${OUT:-/tmp/out}; t0=$(date +%s)
el() { echo "[$(( $(date +%s) - t0 ))s] $*"; }
nvcc -std=c++17 -O3 -I kernels/include -I kernels/cuda -gencode=arch=compute_90,code=sm_90 --expt-relaxed-constexpr \
  -o /tmp/tl bench/timeline_probe.cu || { echo build failed; exit 1; }
S=4096x8192,8192x4096,32768x8192,16384x4096,8192x8192,8192x5120,32768x4096,8192x2048
for k in 1 2; do /tmp/tl --shapes $S > $OUT/tl$k.txt 2>&1; el "tl$k rc=$?"; done
for k in 1 2; do grep -E "^ratio|^events" $OUT/tl$k.txt; done
# Call 8 also: is cudaMemcpyAsync's device-to-device copy a kernel? (ncu lists every kernel it sees.)
if [ "${WITH_NCU:-0}" = 1 ]; then
  ncu --clock-control none --csv --metrics gpu__time_duration.sum /tmp/tl --shapes 2048x8192 --iters 3 > $OUT/ncu.csv 2> $OUT/ncu.err
  echo "ncu rc=$? kernels seen:"; python3 - "$OUT/ncu.csv" <<'PY'
import csv, sys, collections
lines = [l for l in open(sys.argv[1]) if l.startswith('"')]
rows = list(csv.DictReader(lines))
c = collections.Counter(r.get('Kernel Name', '?')[:90] for r in rows)
for k, n in c.most_common(): print(f"{n:5d}  {k}")
PY
fi
