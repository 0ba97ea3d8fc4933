#!/usr/bin/env bash
# Session 23 call 5: the final tree (prebuilt): bwd.packed_rows with full warps (A/B in call 4:
# bf16 +4-5 % median) now tested: test_gpu_backward narrowed to it (its 2^31 case inside), certify,
# the corpus replay of both packed variants, memcheck and racecheck of the backward at tails,
# test_dispatch (the plain forward from R = 512) and test_launch_configs, the default bench.
set -u
OUT=${OUT:-/tmp/out}; B=build/gpu; t0=$(date +%s)
el() { echo "[$(( $(date +%s) - t0 ))s] $*"; }
xz -dc .probe/prebuilt.tar.xz | tar -xf - || { echo unpack failed; exit 1; }
el "build $(cut -c1-12 $B/PREBUILT_COMMIT) source $(cut -c1-12 .source-commit)"
TB=$B/kernels/tests/test_gpu_backward
# test_gpu_backward narrowed to bwd.packed_rows, a process per test case (its 15 cases, the 2^31
# one among them, one oracle thread each): alone it ran past 270 s in session 11.
$TB --list-test-names-only | grep -v -e '^$' -e 'test case' > /tmp/bwd_cases.txt
i=0
while IFS= read -r name; do
  i=$((i + 1))
  (RMSNORM_VARIANTS='bwd.packed_rows*' OMP_NUM_THREADS=2 timeout 250 $TB -w NoTests "${name//,/\\,}" > $OUT/t_bwd_$i.log 2>&1; echo "rc=$? $name" > $OUT/t_bwd_$i.rc) &
done < /tmp/bwd_cases.txt
(timeout 250 $B/cli/rmsnorm-cert certify 'bwd.packed_rows*' --cases 12 --jobs 2 --out $OUT/cert > $OUT/certify.log 2>&1; echo "rc=$?" > $OUT/certify.rc) &
(timeout 250 $B/cli/rmsnorm-cert replay corpora --variant 'fwd.packed_rows,bwd.packed_rows*' --quiet > $OUT/replay.log 2>&1; echo "rc=$?" > $OUT/replay.rc) &
$B/kernels/tests/test_dispatch > $OUT/dispatch.log 2>&1; el "test_dispatch rc=$? $(tail -2 $OUT/dispatch.log | tr '\n' ' ')"
$B/kernels/tests/test_launch_configs > $OUT/configs.log 2>&1; el "test_launch_configs rc=$? $(tail -1 $OUT/configs.log)"
S="--dtype bf16,f32 --rows 4100 --dims 33,1025,4097,8191 --iters 5"
timeout 100 compute-sanitizer --tool memcheck --error-exitcode 9 $B/bench/rmsnorm-bench --variant 'bwd.packed_rows*' --op backward,add_backward $S > $OUT/san_mem_bwd.log 2>&1
el "memcheck bwd rc=$? $(grep -E 'ERROR SUMMARY' $OUT/san_mem_bwd.log | tail -1)"
timeout 60 compute-sanitizer --tool racecheck --error-exitcode 9 $B/bench/rmsnorm-bench --variant 'bwd.packed_rows*' --op backward,add_backward --dtype bf16 --rows 1001 --dims 1025 --iters 3 > $OUT/san_race_bwd.log 2>&1
el "racecheck bwd rc=$? $(grep -E 'RACECHECK SUMMARY' $OUT/san_race_bwd.log | tail -1)"
timeout 60 compute-sanitizer --tool memcheck --error-exitcode 9 $B/bench/rmsnorm-bench --variant fwd.packed_rows --op forward --dtype bf16 --rows 513,1001 --dims 33,1025,2049 --iters 5 > $OUT/san_mem_fwd.log 2>&1
el "memcheck fwd (R = 513, 1001) rc=$? $(grep -E 'ERROR SUMMARY' $OUT/san_mem_fwd.log | tail -1)"
wait
cat $OUT/t_bwd_*.rc | sort | uniq -c | sort -rn | head -20
grep -h -E "passed|failed" $OUT/t_bwd_*.log | sort | uniq -c
for p in certify replay; do el "$p $(cat $OUT/$p.rc) $(grep -E 'passed|failed|PASS|FAIL|^replay:' $OUT/$p.log | tail -4 | tr '\n' ' ' | cut -c1-400)"; grep -B3 -A12 FAILED $OUT/$p.log | head -30; done
timeout 60 $B/bench/rmsnorm-bench --csv $OUT/bench1.csv > /dev/null 2>&1; el "default bench rc=$?"
python3 scripts/bench_table.py $OUT/bench1.csv > $OUT/bench_table1.txt 2>&1; head -8 $OUT/bench_table1.txt
cd $OUT && tar -czf logs.tgz *.log *.rc cert 2>/dev/null && rm -rf *.log *.rc cert; ls
el done
