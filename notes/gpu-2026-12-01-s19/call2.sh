#!/usr/bin/env bash
# Session 19 call 2: the re-measured hints (commit 7e925b8; kernels SASS-identical to call 1's).
# The dispatcher's GPU test cases, the default bench twice, bwd R = 2-3 at D > 16384 by name
# (left on bwd.cluster_rows unmeasured), the bench's order effect (is it the first shape after a
# large one's buffers were freed?), then certify and differential fuzz of the newly dispatched
# forms side by side.
set -u
OUT=${OUT:-/tmp/out}; B=build/gpu; t0=$(date +%s)
el() { echo "[$(( $(date +%s) - t0 ))s] $*"; }
xz -dc .probe/prebuilt.tar.xz | tar -xf - || { echo unpack failed; exit 1; }
el "prebuilt $(cut -c1-12 $B/PREBUILT_COMMIT) source $(cut -c1-12 .source-commit)"
$B/kernels/tests/test_dispatch > $OUT/dispatch.log 2>&1; el "test_dispatch rc=$? $(grep -E 'passed|failed' $OUT/dispatch.log | tail -1)"
$B/kernels/tests/test_gpu_backward -w NoTests "the dispatcher's backward choice among the staged variants" > $OUT/gpu_dispatch_bwd.log 2>&1
el "test_gpu_backward dispatcher rc=$? $(grep -E 'passed|failed' $OUT/gpu_dispatch_bwd.log | tail -1)"; grep -B3 -A6 FAILED $OUT/gpu_dispatch_bwd.log | head -20
$B/kernels/tests/test_gpu_forward -w NoTests "the dispatcher's forward choice for few long rows*" > $OUT/gpu_dispatch_fwd.log 2>&1
el "test_gpu_forward dispatcher rc=$? $(grep -E 'passed|failed' $OUT/gpu_dispatch_fwd.log | tail -1)"; grep -B3 -A6 FAILED $OUT/gpu_dispatch_fwd.log | head -20
for k in 1 2; do
  timeout 90 $B/bench/rmsnorm-bench --csv $OUT/bench$k.csv > /dev/null 2>&1; el "default bench $k rc=$?"
  python3 scripts/bench_table.py $OUT/bench$k.csv > $OUT/bench_table$k.txt 2>&1
done
for D in 16392 32768 65536; do
  timeout 60 $B/bench/rmsnorm-bench --variant 'bwd.cluster_rows.vec8,bwd.staged_cluster.vec8' --op backward --dtype bf16 --rows 1,2,3,4 --dims $D --csv $OUT/r23_$D.csv > /dev/null 2>&1
done
{ head -1 $OUT/r23_16392.csv; for D in 16392 32768 65536; do tail -n +2 $OUT/r23_$D.csv; done; } | cut -d, -f2-6,8 > $OUT/r23.txt
# Order effect: 32768 x 4096 backward alone, after 32768 x 65536 (twice in a row), forward the same.
ob() { timeout 60 $B/bench/rmsnorm-bench --op $1 --dtype bf16 --rows 32768 --dims $2 --csv $OUT/o.csv > /dev/null 2>&1; echo "$1 dims $2: $(tail -n +2 $OUT/o.csv | cut -d, -f5,6,8,10,12 | tr '\n' ' ')"; }
{ ob backward 4096; ob backward 65536,4096,4096; ob backward 4096,4096; ob forward 4096; ob forward 65536,4096,4096; ob backward 8192,4096; } > $OUT/order.txt 2>&1
el "order probe done"
mkdir -p $OUT/found
f() { timeout 150 $B/cli/rmsnorm-cert fuzz --seconds 100 --variant "$1" --op $2 --seed $3 --out $OUT/found > $OUT/fuzz_$4.log 2>&1; echo "rc=$?" > $OUT/fuzz_$4.rc; }
f 'fwd.cluster_row' forward_quant 0x5e19f001 clq &
f 'fwd.cluster_row' add_forward_quant 0x5e19f002 claddq &
f 'bwd.staged_cluster*' backward 0x5e19b003 scbwd &
(timeout 150 $B/cli/rmsnorm-cert certify fwd.cluster_row --cases 12 --jobs 3 --out $OUT/cert > $OUT/certify.log 2>&1; echo "rc=$?" > $OUT/certify.rc) &
wait
for n in clq claddq scbwd; do el "fuzz $n $(cat $OUT/fuzz_$n.rc) $(grep -vE '^\s*$' $OUT/fuzz_$n.log | tail -2 | tr '\n' ' ' | cut -c1-250)"; done
el "certify $(cat $OUT/certify.rc) $(grep -E 'PASS|FAIL' $OUT/certify.log | tail -1 | cut -c1-160)"
ls $OUT/found
cd $OUT && tar -czf logs.tgz *.log *.rc *.csv found cert 2>/dev/null && find . -maxdepth 1 -type f ! -name logs.tgz ! -name 'bench*.csv' ! -name 'bench_table*' ! -name r23.txt ! -name order.txt -delete; rm -rf found cert; cd - >/dev/null
el done
cat $OUT/r23.txt $OUT/order.txt
cat $OUT/bench_table1.txt
