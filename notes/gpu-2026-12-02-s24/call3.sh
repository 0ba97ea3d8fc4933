#!/usr/bin/env bash
# Session 24 call 3: the flat-rows probe (flat_probe.cu beside this script, built here alone):
# packed bf16 rows read and written as flat 16-byte vectors with a canonical (D-only) order of
# the row sums. Its own checks (sums bitwise against the host's canonical order, y within 2 ulps,
# the batch moved one row on bitwise) and its time against a device copy; beside it main's
# rmsnorm-bench (prebuilt) at the same shapes: the dispatched forward and fwd.packed_rows /
# fwd.shifted_row by name; ncu's instruction count and issue share of the probe and of the two.
set -u
OUT=${OUT:-/tmp/out}; t0=$(date +%s)
el() { echo "[$(( $(date +%s) - t0 ))s] $*"; }
D=notes/gpu-2026-12-02-s24
nvcc -O3 -std=c++17 -gencode=arch=compute_90,code=sm_90 -Xptxas -v -o /tmp/flat_probe $D/flat_probe.cu > $OUT/probe_build.log 2>&1
el "probe build rc=$? $(grep -E 'registers' $OUT/probe_build.log | tr '\n' ' ')"
mkdir -p /tmp/mainb && xz -dc .probe/prebuilt.tar.xz | tar -C /tmp/mainb -xf - && BENCH=/tmp/mainb/build/gpu/bench/rmsnorm-bench
timeout 120 /tmp/flat_probe > $OUT/probe.txt 2>&1; el "probe rc=$?"; cat $OUT/probe.txt
timeout 100 $BENCH --op forward,add_forward --dtype bf16 --rows 4096,32768 --dims 513,1025,2049,4097,8191 --csv $OUT/bench_dispatch.csv > /dev/null 2>&1; el "bench dispatch rc=$?"
timeout 150 $BENCH --variant fwd.packed_rows,fwd.shifted_row --op forward,add_forward --dtype bf16 --rows 4096,32768 --dims 513,1025,2049,4097,8191 --csv $OUT/bench_byname.csv > /dev/null 2>&1; el "bench by name rc=$?"
python3 - "$OUT/bench_dispatch.csv" "$OUT/bench_byname.csv" <<'PY' | tee $OUT/bench_ratios.txt
import csv, sys
for f in sys.argv[1:]:
    print("==", f.split("/")[-1])
    for r in csv.DictReader(open(f)):
        print(f"{r['op']:<12} {r['rows']:>6} {r['dim']:>5} {r['variant']:<18} {float(r['time_us']):9.2f} {float(r['copy_us']):9.2f} {r['ratio']}")
PY
M=smsp__inst_executed.sum,gpu__time_duration.sum,smsp__issue_active.avg.pct_of_peak_sustained_active,dram__throughput.avg.pct_of_peak_sustained_elapsed,launch__registers_per_thread,sm__warps_active.avg.pct_of_peak_sustained_active
for f in ILb0ELb1E ILb1ELb1E; do
  ncu --clock-control none --metrics $M -k regex:$f --launch-skip 3 --launch-count 1 /tmp/flat_probe 32768 1025 > $OUT/ncu_probe_$f.txt 2>&1; el "ncu probe $f rc=$?"
done
grep -h -E "flat_fwd|fwd_|smsp__inst|gpu__time|issue_active|dram__thr|registers_per|warps_active" $OUT/ncu_*.txt | grep -v "==PROF==" | head -40
cd $OUT && tar -czf call_logs.tgz *.log *.txt *.csv && rm -f *.log ncu_*.txt *.csv; ls
el done
