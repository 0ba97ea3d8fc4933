#!/usr/bin/env bash
# Session 20 call 10: the final build (the stagger to 10 KB rows; kernels SASS-identical to call
# 9's): the GPU test of the stagger (with 5120 f16 and the 8192 control), the block_row cases
# again, test_dispatch, and the default bench twice (the session's table).
set -u
OUT=${OUT:-/tmp/out}; B=build/gpu; t0=$(date +%s)
el() { echo "[$(( $(date +%s) - t0 ))s] $*"; }
xz -dc .probe/prebuilt.tar.xz | tar -xf - || { echo unpack failed; exit 1; }
el "prebuilt $(cut -c1-12 $B/PREBUILT_COMMIT) source $(cut -c1-12 .source-commit)"
for k in 1 2; do
  timeout 90 $B/bench/rmsnorm-bench --csv $OUT/bench$k.csv > /dev/null 2>&1; el "default bench $k rc=$?"
  python3 scripts/bench_table.py $OUT/bench$k.csv > $OUT/bench_table$k.txt 2>&1
done
TF=$B/kernels/tests/test_gpu_forward
(timeout 300 $TF -w NoTests "forward: fwd.block_row's staggered first wave*" > $OUT/t_stagger.log 2>&1; echo "rc=$?" > $OUT/t_stagger.rc) &
(RMSNORM_VARIANTS=fwd.block_row timeout 300 $TF -w NoTests "forward: fwd.block_row over more rows than a wave*,forward: R = 0 is a no-op*" > $OUT/t_block.log 2>&1; echo "rc=$?" > $OUT/t_block.rc) &
$B/kernels/tests/test_dispatch > $OUT/dispatch.log 2>&1; el "test_dispatch rc=$? $(tail -2 $OUT/dispatch.log | tr '\n' ' ')"
wait
for p in t_stagger t_block; do el "$p $(cat $OUT/$p.rc) $(grep -E 'passed|failed' $OUT/$p.log | tail -2 | tr '\n' ' ')"; grep -B3 -A8 FAILED $OUT/$p.log | head -20; done
grep -A12 -iE "^forward|summary" $OUT/bench_table1.txt | head -40
cd $OUT && tar -czf logs.tgz *.log *.rc && rm -f *.log *.rc; ls
el done
