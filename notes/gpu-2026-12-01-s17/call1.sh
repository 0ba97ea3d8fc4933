#!/usr/bin/env bash
# Session 17 call 1: fwd.block_row's lean-y FP8 kernel (16-bit rows 8192 < D <= 16384) by name
# against fwd.large_d_pair / fwd.large_d; session 16's unrun checks (the ring's four new shapes in
# the whole test_gpu_forward, a process per test case; the stage-ring path cases under racecheck);
# the lean path case under racecheck / memcheck / synccheck; certify fwd.block_row; corpus replay of
# every forward variant; test_dispatch, test_launch_configs; the default bench.
set -u
OUT=${OUT:-/tmp/out}; L=$OUT/logs; mkdir -p $L; B=build/gpu; t0=$(date +%s)
el() { echo "[$(( $(date +%s) - t0 ))s] $*"; }
xz -dc .probe/prebuilt.tar.xz | tar -xf - || { echo unpack failed; exit 1; }
el "prebuilt $(cut -c1-12 $B/PREBUILT_COMMIT) source $(cut -c1-12 .source-commit)"
for fv in corpora/paths/fwd_block_row_lean_fp8.case:fwd.block_row corpora/paths/fwd_staged_fp8_rows_per_block.case:fwd.staged_rows corpora/paths/bwd_staged_stage_wrap.case:bwd.staged_rows.vec8; do
  f=${fv%%:*}; v=${fv#*:}; n=$(basename $f .case)
  for tool in racecheck memcheck synccheck; do
    [ $tool != racecheck ] && [ $n != fwd_block_row_lean_fp8 ] && continue
    timeout 120 compute-sanitizer --tool $tool --error-exitcode 9 $B/cli/rmsnorm-cert replay $f --variant $v > $L/san_${n}_$tool.log 2>&1
    el "$tool $n rc=$? $(grep -E 'passed|failed|SUMMARY' $L/san_${n}_$tool.log | tr '\n' ' ' | cut -c1-160)"
  done
done
BA="--dtype bf16 --rows 64,256,512,4096,8192,32768 --dims 9216,12288,16384"
timeout 150 $B/bench/rmsnorm-bench --variant 'fwd.block_row,fwd.large_d_pair,fwd.large_d' --op forward_quant,add_forward_quant $BA --csv $L/a1.csv > $L/a1.txt 2>&1
el "bench by name rc=$?"
timeout 60 $B/bench/rmsnorm-bench --variant 'fwd.block_row,fwd.large_d_pair,fwd.large_d' --op forward_quant,add_forward_quant --dtype f16 --rows 512,8192 --dims 12288,16384 --csv $L/a2.csv > $L/a2.txt 2>&1
el "bench by name f16 rc=$?"
python3 - $L > $OUT/ab_table.txt <<'PY'
import csv, sys, glob, collections
L = sys.argv[1]; r = collections.defaultdict(list)
for f in sorted(glob.glob(L + '/a[12].csv')):
    for x in csv.DictReader(open(f)):
        r[(x['op'], x['dtype'], int(x['rows']), int(x['dim']), x['variant'])].append(float(x['ratio']))
keys = sorted({k[:4] for k in r})
vs = ['fwd.block_row', 'fwd.large_d_pair', 'fwd.large_d']
print('%-18s %-5s %6s %6s  ' % ('op', 'dtype', 'R', 'D') + ' '.join('%-9s' % v[4:] for v in vs) + ' best')
for k in keys:
    vals = [r.get(k + (v,), []) for v in vs]
    best = max(range(3), key=lambda i: max(vals[i]) if vals[i] else -1)
    print('%-18s %-5s %6d %6d  ' % k + ' '.join('%-9s' % ('/'.join('%.3f' % y for y in v) or '-') for v in vals) + ' ' + vs[best][4:])
PY
timeout 60 $B/kernels/tests/test_launch_configs > $L/launch_configs.txt 2>&1; el "launch_configs rc=$? $(tail -1 $L/launch_configs.txt)"
timeout 60 $B/kernels/tests/test_dispatch > $L/dispatch.txt 2>&1; el "test_dispatch rc=$? $(grep -E 'passed|failed' $L/dispatch.txt | tail -1)"
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
(fwd_cases; echo "fwd shards rc=$?" > $L/shards.rc) &
(timeout 300 $B/cli/rmsnorm-cert certify fwd.block_row --cases 12 --jobs 4 --out $L/cert > $L/certify.log 2>&1; echo "certify rc=$?" > $L/certify.rc) &
(timeout 300 $B/cli/rmsnorm-cert replay corpora --variant 'fwd.*' > $L/corpus.log 2>&1; echo "corpus rc=$?" > $L/corpus.rc) &
wait
el "$(cat $L/shards.rc) $(for f in $L/shard_fwd_*.log; do tail -2 $f | grep -E 'passed|failed' ; done | awk '{a+=$(NF-1)} END{print a" assertions (sum of last counts)"}')"
grep -l -E "FAILED|failed" $L/shard_fwd_*.log | head
grep -h -E "test cases|All tests" $L/shard_fwd_*.log | sort | uniq -c | head -20
el "$(cat $L/certify.rc) $(grep -E 'PASS|FAIL' $L/certify.log | tail -3 | tr '\n' ' ')"
el "$(cat $L/corpus.rc) $(grep -E 'case files' $L/corpus.log | tail -1)"
left=$(( 570 - ($(date +%s) - t0) ))
if [ $left -gt 60 ]; then
  timeout $left $B/bench/rmsnorm-bench --csv $L/bench.csv > $L/bench.log 2>&1; el "default bench rc=$?"
  python3 scripts/bench_table.py $L/bench.csv > $OUT/bench_table.txt 2>&1
  cp $L/bench.csv $OUT/bench.csv
else el "default bench skipped: ${left}s left"; fi
cd $OUT && tar -czf logs.tgz logs && rm -rf logs; cd - >/dev/null
el done
cat $OUT/ab_table.txt
head -12 $OUT/bench_table.txt 2>/dev/null
