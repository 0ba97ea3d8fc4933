#!/usr/bin/env bash
# Session 21 call 4: the build that dispatches fwd.shifted_row (its kernels SASS-identical to call
# 2's): test_dispatch, memcheck of the dispatched plain forward at 4096 x 1025 and 32768 x 4097
# bf16, then the default bench twice (the table).
set -u
OUT=${OUT:-/tmp/out}; B=build/gpu; t0=$(date +%s)
el() { echo "[$(( $(date +%s) - t0 ))s] $*"; }
xz -dc .probe/prebuilt.tar.xz | tar -xf - || { echo unpack failed; exit 1; }
el "build $(cut -c1-12 $B/PREBUILT_COMMIT) source $(cut -c1-12 .source-commit)"
$B/kernels/tests/test_dispatch > $OUT/dispatch.log 2>&1; el "test_dispatch rc=$? $(tail -2 $OUT/dispatch.log | tr '\n' ' ')"
timeout 120 compute-sanitizer --tool memcheck --error-exitcode 9 $B/bench/rmsnorm-bench --op forward --dtype bf16 --rows 4096,32768 --dims 1025,4097 --iters 2 > $OUT/san_memcheck.log 2>&1
el "memcheck rc=$? $(grep -E 'ERROR SUMMARY' $OUT/san_memcheck.log | tail -1) $(grep -c shifted_row $OUT/san_memcheck.log) lines name fwd.shifted_row"
for k in 1 2; do
  timeout 120 $B/bench/rmsnorm-bench --csv $OUT/bench$k.csv > /dev/null 2>&1; el "default bench $k rc=$?"
  python3 scripts/bench_table.py $OUT/bench$k.csv > $OUT/bench_table$k.txt 2>&1
done
head -8 $OUT/bench_table1.txt; head -8 $OUT/bench_table2.txt
grep -h -E '^"NVIDIA H200",(forward|add_forward),(bf16|f16|f32),[0-9]+,1025,' $OUT/bench1.csv $OUT/bench2.csv | cut -d, -f2-6,12
cd $OUT && tar -czf logs.tgz *.log 2>/dev/null && rm -f *.log; ls
el done
