#!/usr/bin/env bash
# Session 17 call 6: main's final build (the kernels of calls 3-4, the hints of 2bf794d / 5466090):
# the whole test_gpu_forward, a process per test case (the dispatcher's GPU tests among them);
# test_dispatch, test_launch_configs; memcheck of the property suite narrowed to the changed
# variants; the default bench twice.
set -u
OUT=${OUT:-/tmp/out}; L=$OUT/logs; mkdir -p $L; B=build/gpu; t0=$(date +%s)
el() { echo "[$(( $(date +%s) - t0 ))s] $*"; }
xz -dc .probe/prebuilt.tar.xz | tar -xf - || { echo unpack failed; exit 1; }
el "prebuilt $(cut -c1-12 $B/PREBUILT_COMMIT) source $(cut -c1-12 .source-commit)"
timeout 60 $B/kernels/tests/test_launch_configs > $L/launch_configs.txt 2>&1; el "launch_configs rc=$? $(tail -1 $L/launch_configs.txt)"
timeout 60 $B/kernels/tests/test_dispatch > $L/dispatch.txt 2>&1; el "test_dispatch rc=$? $(grep -E 'passed|failed' $L/dispatch.txt | tail -1)"
timeout 150 $B/bench/rmsnorm-bench --csv $L/bench1.csv > $L/bench1.log 2>&1; el "default bench 1 rc=$?"
fwd_cases() {
  local i=0 rc=0 n
  while IFS= read -r n; do
    i=$((i + 1))
    [ "$(jobs -rp | wc -l)" -lt 6 ] || wait -n || rc=1
    timeout 300 $B/kernels/tests/test_gpu_forward -w NoTests "$n" > "$L/shard_fwd_$(printf %02d $i).log" 2>&1 &
  done < <($B/kernels/tests/test_gpu_forward --list-test-names-only | grep -v '^$' | sed 's/,/\\,/g; s/\[/\\[/g; s/\]/\\]/g')
  while [ -n "$(jobs -rp)" ]; do wait -n || rc=1; done
  return $rc
}
fwd_cases; el "fwd shards rc=$?"
grep -l -E "FAILED|failed" $L/shard_fwd_*.log | head
grep -h -E "test cases|All tests" $L/shard_fwd_*.log | awk '{print}' | sort | uniq -c | head -30
for v in fwd.block_row 'fwd.large_d*'; do
  RMSNORM_VARIANTS="$v" RMSNORM_PROP_CASES=6 timeout 120 compute-sanitizer --tool memcheck --error-exitcode 9 \
    $B/properties/properties_suite -w NoTests "*(CUDA variants)*" "~P18*" > $L/san_memcheck_$(echo $v | tr -d '*').log 2>&1
  el "memcheck $v rc=$? $(tail -2 $L/san_memcheck_$(echo $v | tr -d '*').log | tr '\n' ' ')"
done
timeout 150 $B/bench/rmsnorm-bench --csv $L/bench2.csv > $L/bench2.log 2>&1; el "default bench 2 rc=$?"
python3 scripts/bench_table.py $L/bench1.csv > $OUT/bench_table1.txt 2>&1
python3 scripts/bench_table.py $L/bench2.csv > $OUT/bench_table2.txt 2>&1
cp $L/bench1.csv $OUT/bench1.csv; cp $L/bench2.csv $OUT/bench2.csv
cd $OUT && tar -czf logs.tgz logs && rm -rf logs; cd - >/dev/null
el done
head -8 $OUT/bench_table1.txt; head -8 $OUT/bench_table2.txt
