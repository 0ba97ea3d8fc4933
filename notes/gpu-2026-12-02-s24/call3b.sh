#!/usr/bin/env bash
# Session 24 call 3b: call 3 cut to the device time left (about 330 s with the start): the flat
# probe (its checks and its time against a copy), then main's bench by name at the probe's
# widths (fwd.packed_rows and fwd.shifted_row, forward and fused add). Results written as they come.
set -u
OUT=${OUT:-/tmp/out}; t0=$(date +%s)
el() { echo "[$(( $(date +%s) - t0 ))s] $*"; }
nvcc -O3 -std=c++17 -gencode=arch=compute_90,code=sm_90 -o /tmp/flat_probe notes/gpu-2026-12-02-s24/flat_probe.cu > $OUT/probe_build.log 2>&1
el "probe build rc=$?"
timeout 100 /tmp/flat_probe > $OUT/probe.txt 2>&1; el "probe rc=$?"; cat $OUT/probe.txt
mkdir -p /tmp/mainb && xz -dc .probe/prebuilt.tar.xz | tar -C /tmp/mainb -xf - build/gpu/bench/rmsnorm-bench
timeout 60 /tmp/mainb/build/gpu/bench/rmsnorm-bench --variant fwd.packed_rows,fwd.shifted_row --op forward,add_forward --dtype bf16 \
  --rows 4096,32768 --dims 513,1025,2049,4097,8191 --csv $OUT/bench_byname.csv > /dev/null 2>&1; el "bench rc=$?"
python3 -c "
import csv
for r in csv.DictReader(open('$OUT/bench_byname.csv')):
    print(f\"{r['op']:<12} {r['rows']:>6} {r['dim']:>5} {r['variant']:<16} {float(r['time_us']):9.2f} {float(r['copy_us']):9.2f} {r['ratio']}\")
" | tee $OUT/bench_byname.txt
el done
