#!/usr/bin/env bash
# Session 18 call 10: the re-measured backward hints — the dispatcher's test, the default bench twice.
set -u
OUT=${OUT:-/tmp/out}; B=build/gpu; t0=$(date +%s)
el() { echo "[$(( $(date +%s) - t0 ))s] $*"; }
xz -dc .probe/prebuilt.tar.xz | tar -xf - || { echo unpack failed; exit 1; }
el "prebuilt $(cut -c1-12 $B/PREBUILT_COMMIT) source $(cut -c1-12 .source-commit)"
$B/kernels/tests/test_dispatch > $OUT/dispatch.txt 2>&1; el "test_dispatch rc=$? $(grep -E 'passed|failed' $OUT/dispatch.txt | tail -1)"
$B/kernels/tests/test_gpu_backward -w NoTests "the dispatcher's backward choice among the staged variants" > $OUT/gpu_dispatch.txt 2>&1
el "test_gpu_backward dispatcher rc=$? $(grep -E 'passed|failed' $OUT/gpu_dispatch.txt | tail -1)"; grep -B3 -A6 FAILED $OUT/gpu_dispatch.txt | head -30
for k in 1 2; do
  timeout 60 $B/bench/rmsnorm-bench --csv $OUT/bench$k.csv > $OUT/bench$k.txt 2>&1; el "default bench $k rc=$?"
  python3 scripts/bench_table.py $OUT/bench$k.csv > $OUT/bench_table$k.txt 2>&1
done
cd $OUT && tar -czf logs.tgz *.txt *.csv && find . -maxdepth 1 -type f ! -name logs.tgz ! -name 'bench*' -delete; rm -f bench1.txt bench2.txt; cd - >/dev/null
el done
cat $OUT/bench_table1.txt; cat $OUT/bench_table2.txt
