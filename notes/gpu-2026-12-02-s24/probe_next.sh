#!/usr/bin/env bash
# For the next session's first call (written in session 24, not run): the revised flat-rows probe
# (prefetch forms p, two vectors a thread with more blocks an SM, the bench's own timing, o at x's
# lead, tiles that hold a row plus its lead) and main's bench by name at the same widths, then
# ncu on two forms at 32768 x 1025. Needs .probe/prebuilt.tar.xz (any build of main) carried.
set -u
OUT=${OUT:-/tmp/out}; t0=$(date +%s)
el() { echo "[$(( $(date +%s) - t0 ))s] $*"; }
nvcc -O3 -std=c++17 -gencode=arch=compute_90,code=sm_90 -I bench -Xptxas -v -o /tmp/flat_probe notes/gpu-2026-12-02-s24/flat_probe.cu > $OUT/probe_build.log 2>&1
el "probe build rc=$?"
timeout 240 /tmp/flat_probe > $OUT/probe.txt 2>&1; el "probe rc=$?"; cat $OUT/probe.txt
mkdir -p /tmp/mainb && xz -dc .probe/prebuilt.tar.xz | tar -C /tmp/mainb -xf - build/gpu/bench/rmsnorm-bench
timeout 60 /tmp/mainb/build/gpu/bench/rmsnorm-bench --variant fwd.packed_rows,fwd.shifted_row --op forward,add_forward --dtype bf16 \
  --rows 4096,8192,32768 --dims 513,1025,2049,4097,8191 --csv $OUT/bench_byname.csv > /dev/null 2>&1; el "bench rc=$?"
python3 -c "
import csv
for r in csv.DictReader(open('$OUT/bench_byname.csv')):
    print(f\"{r['op']:<12} {r['rows']:>6} {r['dim']:>5} {r['variant']:<16} {float(r['time_us']):9.2f} {float(r['copy_us']):9.2f} {r['ratio']}\")
" | tee $OUT/bench_byname.txt
M=smsp__inst_executed.sum,gpu__time_duration.sum,smsp__issue_active.avg.pct_of_peak_sustained_active,dram__throughput.avg.pct_of_peak_sustained_elapsed,sm__warps_active.avg.pct_of_peak_sustained_active,smsp__average_warps_issue_stalled_barrier_per_issue_active.ratio,smsp__average_warps_issue_stalled_long_scoreboard_per_issue_active.ratio
for f in ILb1ELb1ELb1ELi4E ILb1ELb1ELb0ELi2E; do
  timeout 60 ncu --clock-control none --metrics $M -k regex:$f --launch-skip 3 --launch-count 1 /tmp/flat_probe 32768 1025 > $OUT/ncu_$f.txt 2>&1; el "ncu $f rc=$?"
  grep -E "smsp__|gpu__|dram__|sm__" $OUT/ncu_$f.txt
done
el done
