#!/usr/bin/env bash
# Session 20 call 12: the final build (the stagger for the plain forward to 10 KB rows and for the
# fused add + FP8; every kernel SASS-identical to call 11's candidate): the stagger's GPU test
# with its final shapes, the block_row cases, test_dispatch, certify fwd.block_row, its corpus
# replay, memcheck / racecheck of the add + FP8 stagger, then the default bench twice.
set -u
OUT=${OUT:-/tmp/out}; B=build/gpu; t0=$(date +%s)
el() { echo "[$(( $(date +%s) - t0 ))s] $*"; }
xz -dc .probe/prebuilt.tar.xz | tar -xf - || { echo unpack failed; exit 1; }
el "prebuilt $(cut -c1-12 $B/PREBUILT_COMMIT) source $(cut -c1-12 .source-commit)"
for k in 1 2; do
  timeout 90 $B/bench/rmsnorm-bench --csv $OUT/bench$k.csv > /dev/null 2>&1; el "default bench $k rc=$?"
  python3 scripts/bench_table.py $OUT/bench$k.csv > $OUT/bench_table$k.txt 2>&1
done
for tool in memcheck racecheck; do
  timeout 120 compute-sanitizer --tool $tool --error-exitcode 9 $B/bench/rmsnorm-bench --variant fwd.block_row --op add_forward_quant --dtype bf16 --rows 4096 --dims 8192 --iters 2 > $OUT/san_$tool.log 2>&1
  el "$tool rc=$? $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' $OUT/san_$tool.log | tail -1)"
done
TF=$B/kernels/tests/test_gpu_forward
(timeout 300 $TF -w NoTests "forward: fwd.block_row's staggered first wave*" > $OUT/t_stagger.log 2>&1; echo "rc=$?" > $OUT/t_stagger.rc) &
(RMSNORM_VARIANTS=fwd.block_row timeout 300 $TF -w NoTests "forward: fwd.block_row over more rows than a wave*,forward: R = 0 is a no-op*,forward: FP8 quantization*,forward: fused add*" > $OUT/t_block.log 2>&1; echo "rc=$?" > $OUT/t_block.rc) &
(timeout 300 $B/cli/rmsnorm-cert certify fwd.block_row --cases 12 --jobs 3 --out $OUT/cert > $OUT/certify.log 2>&1; echo "rc=$?" > $OUT/certify.rc) &
(timeout 300 $B/cli/rmsnorm-cert replay corpora --variant fwd.block_row --quiet > $OUT/replay.log 2>&1; echo "rc=$?" > $OUT/replay.rc) &
$B/kernels/tests/test_dispatch > $OUT/dispatch.log 2>&1; el "test_dispatch rc=$? $(tail -2 $OUT/dispatch.log | tr '\n' ' ')"
wait
for p in t_stagger t_block certify replay; do el "$p $(cat $OUT/$p.rc) $(grep -E 'passed|failed|PASS|FAIL|^replay:' $OUT/$p.log | tail -2 | tr '\n' ' ' | cut -c1-220)"; grep -B3 -A8 FAILED $OUT/$p.log | head -30; done
head -8 $OUT/bench_table1.txt; head -8 $OUT/bench_table2.txt
cd $OUT && tar -czf logs.tgz *.log *.rc cert && rm -rf *.log *.rc cert; ls
el done
