#!/usr/bin/env bash
# Session 18 call 3: the dg partial through shared memory (write_dg_partial's kShared form) —
# A/B bench against call 1's build, backward shards of the changed variants, certify, corpus,
# the backward mutants, sanitizers on the backward path cases.
set -u
OUT=${OUT:-/tmp/out}; B=build/gpu; t0=$(date +%s)
el() { echo "[$(( $(date +%s) - t0 ))s] $*"; }
xz -dc .probe/prebuilt.tar.xz | tar -xf - || { echo unpack failed; exit 1; }
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv > $OUT/device.txt
el "prebuilt $(cut -c1-12 $B/PREBUILT_COMMIT) source $(cut -c1-12 .source-commit)"
$B/kernels/tests/test_launch_configs > $OUT/launch_configs.txt 2>&1; el "launch_configs rc=$? $(tail -1 $OUT/launch_configs.txt)"
$B/kernels/tests/test_dispatch > $OUT/dispatch.txt 2>&1; el "dispatch rc=$? $(tail -1 $OUT/dispatch.txt)"
# A/B: old (call 1, 8082ba8) and new, interleaved, the dispatcher's backward picks.
OLD=/tmp/old-bench; xz -dc .probe/old-bench-8082ba8.xz > $OLD; chmod +x $OLD
for k in 1 2; do
  for w in old new; do
    bin=$B/bench/rmsnorm-bench; [ $w = old ] && bin=$OLD
    timeout 90 $bin --op backward,add_backward --dtype bf16 --rows 512,4096,8192,32768 --dims 2048,4096,5120,8192,16384,65536 \
      --csv $OUT/ab_${w}$k.csv > $OUT/ab_${w}$k.txt 2>&1
    el "bench $w $k rc=$?"
  done
done
V='bwd.staged_streams.vec8 bwd.staged_cluster.vec8 bwd.staged_rows.vec8 bwd.persistent_rows.vec8'
for v in $V; do
  (RMSNORM_VARIANTS=$v timeout 300 $B/kernels/tests/test_gpu_backward -w NoTests > $OUT/shard_$v.log 2>&1; echo "rc=$?" > $OUT/shard_$v.rc) &
done
(timeout 300 $B/cli/rmsnorm-cert replay corpora --variant 'bwd.*' > $OUT/replay.log 2>&1; echo "rc=$?" > $OUT/replay.rc) &
wait
for v in $V; do el "shard $v $(cat $OUT/shard_$v.rc) $(tail -1 $OUT/shard_$v.log)"; grep -B2 -A10 "FAILED" $OUT/shard_$v.log | head -30; done
el "replay $(cat $OUT/replay.rc) $(grep -E '^replay:' $OUT/replay.log)"; grep -E "^fail" $OUT/replay.log | head
for v in $V; do
  (timeout 150 $B/cli/rmsnorm-cert certify $v --cases 12 --jobs 3 --out $OUT/cert_$v > $OUT/certify_$v.log 2>&1; echo "rc=$?" > $OUT/certify_$v.rc) &
done
wait
for v in $V; do el "certify $v $(cat $OUT/certify_$v.rc) $(grep -E 'PASS|FAIL' $OUT/certify_$v.log | tail -1)"; done
timeout 120 $B/cli/rmsnorm-cert mutants --pattern 'mutant.bwd.*' --budget 30 --first-kill --jobs 8 --out $OUT/mutants > $OUT/mutants.log 2>&1
el "mutants rc=$? $(grep -cE '^mutant' $OUT/mutants.log) rows"; grep -A12 "kill matrix" $OUT/mutants.log | head -14
for c in corpora/paths/bwd_*.case; do
  for tool in racecheck memcheck; do
    timeout 40 compute-sanitizer --tool $tool --error-exitcode 9 $B/cli/rmsnorm-cert replay $c --variant 'bwd.staged*,bwd.persistent_rows*' > $OUT/san_${tool}_$(basename $c .case).log 2>&1
    rc=$?; [ $(( $(date +%s) - t0 )) -gt 560 ] && break 2
    el "san $tool $(basename $c) rc=$rc $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' $OUT/san_${tool}_$(basename $c .case).log | tr '\n' ' ') $(grep -E '^replay:' $OUT/san_${tool}_$(basename $c .case).log | cut -c1-60)"
  done
done
python3 scripts/bench_compare.py $OUT/ab_old1.csv $OUT/ab_new1.csv > $OUT/ab1_compare.txt 2>&1
python3 scripts/bench_compare.py $OUT/ab_old2.csv $OUT/ab_new2.csv > $OUT/ab2_compare.txt 2>&1
cd $OUT && tar -czf logs.tgz *.log *.txt *.csv *.rc cert_* mutants 2>/dev/null && mkdir -p keep && cp ab*_compare.txt ab_*.csv keep/ && find . -maxdepth 1 -type f ! -name logs.tgz -delete; rm -rf cert_* mutants; mv keep/* . && rmdir keep; cd - >/dev/null
el done
cat $OUT/ab1_compare.txt | head -60
