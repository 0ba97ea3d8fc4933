#!/usr/bin/env bash
# Session 18 call 12: bwd.cluster_rows' dg partial as 16-byte stores — A/B against 81a0cd1, its
# shard, certify, corpus replay, memcheck of the new case.
set -u
OUT=${OUT:-/tmp/out}; B=build/gpu; t0=$(date +%s)
el() { echo "[$(( $(date +%s) - t0 ))s] $*"; }
xz -dc .probe/prebuilt.tar.xz | tar -xf - || { echo unpack failed; exit 1; }
el "prebuilt $(cut -c1-12 $B/PREBUILT_COMMIT) source $(cut -c1-12 .source-commit)"
OLD=/tmp/old-bench; xz -dc .probe/old-bench-81a0cd1.xz > $OLD; chmod +x $OLD
for k in 1 2; do
  for w in old new; do
    bin=$B/bench/rmsnorm-bench; [ $w = old ] && bin=$OLD
    timeout 40 $bin --variant 'bwd.cluster_rows.vec8' --op backward,add_backward --dtype bf16,f32 --rows 1,16,64,512,4096 --dims 12288,16392,32768,65536 \
      --csv $OUT/ab_${w}$k.csv > /dev/null 2>&1; el "bench $w $k rc=$?"
  done
done
V=bwd.cluster_rows.vec8
(RMSNORM_VARIANTS=$V timeout 170 $B/kernels/tests/test_gpu_backward -w NoTests > $OUT/shard.log 2>&1; echo "rc=$?" > $OUT/shard.rc) &
(timeout 170 $B/cli/rmsnorm-cert certify $V --cases 12 --jobs 4 --out $OUT/cert > $OUT/certify.log 2>&1; echo "rc=$?" > $OUT/certify.rc) &
(timeout 170 $B/cli/rmsnorm-cert replay corpora --variant $V > $OUT/replay.log 2>&1; echo "rc=$?" > $OUT/replay.rc) &
(timeout 60 compute-sanitizer --tool memcheck --error-exitcode 9 $B/cli/rmsnorm-cert replay corpora/paths/bwd_cluster_rows_dg_unaligned.case corpora/paths/bwd_cluster_partial_slice.case --variant $V > $OUT/memcheck.log 2>&1; echo "rc=$?" > $OUT/memcheck.rc) &
wait
el "shard $(cat $OUT/shard.rc) $(grep -E 'passed|failed' $OUT/shard.log | tail -1)"; grep -B2 -A10 FAILED $OUT/shard.log | head -30
el "certify $(cat $OUT/certify.rc) $(grep -E 'PASS|FAIL' $OUT/certify.log | tail -1 | cut -c1-160)"
el "replay $(cat $OUT/replay.rc) $(grep -E '^replay:' $OUT/replay.log)"; grep -E "^fail" $OUT/replay.log | head -5
el "memcheck $(cat $OUT/memcheck.rc) $(grep -E 'ERROR SUMMARY|^replay:' $OUT/memcheck.log | tr '\n' ' ')"
python3 scripts/bench_compare.py $OUT/ab_old1.csv $OUT/ab_new1.csv --pair $OUT/ab_old2.csv $OUT/ab_new2.csv > $OUT/ab_compare.txt 2>&1
cd $OUT && tar -czf logs.tgz *.log *.rc *.csv cert 2>/dev/null && find . -maxdepth 1 -type f ! -name logs.tgz ! -name ab_compare.txt -delete; rm -rf cert; cd - >/dev/null
el done
head -50 $OUT/ab_compare.txt
