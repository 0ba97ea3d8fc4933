#!/usr/bin/env bash
# Session 22 call 4: the final build. fwd.packed_rows' plain forward back on its branch per column
# (SASS-identical to call 2's build, dd81046), its fused add and FP8 forms predicated (identical to
# call 3's, 24757b4); bwd.packed_rows' columns past a row's end predicated as well (new here).
# A/B by name of the backward against call 2's build (.probe/bench_dd81046.xz: the backward of
# dd81046), two alternating pairs; test_gpu_backward narrowed to bwd.packed_rows, certify, the
# corpus replay, memcheck and racecheck at tails, test_dispatch, the default bench twice.
set -u
OUT=${OUT:-/tmp/out}; B=build/gpu; t0=$(date +%s)
el() { echo "[$(( $(date +%s) - t0 ))s] $*"; }
xz -dc .probe/prebuilt.tar.xz | tar -xf - || { echo unpack failed; exit 1; }
xz -dc .probe/bench_dd81046.xz > /tmp/bench_old && chmod +x /tmp/bench_old
el "build $(cut -c1-12 $B/PREBUILT_COMMIT) source $(cut -c1-12 .source-commit)"
TB=$B/kernels/tests/test_gpu_backward
(RMSNORM_VARIANTS='bwd.packed_rows*' timeout 500 $TB -w NoTests > $OUT/t_bwd.log 2>&1; echo "rc=$?" > $OUT/t_bwd.rc) &
(timeout 500 $B/cli/rmsnorm-cert certify 'bwd.packed_rows*' --cases 12 --jobs 2 --out $OUT/cert > $OUT/certify.log 2>&1; echo "rc=$?" > $OUT/certify.rc) &
(timeout 500 $B/cli/rmsnorm-cert replay corpora --variant 'bwd.packed_rows*,fwd.packed_rows' --quiet > $OUT/replay.log 2>&1; echo "rc=$?" > $OUT/replay.rc) &
A="--variant bwd.packed_rows* --op backward,add_backward --dtype bf16,f32 --rows 4096,32768 --dims 513,1025,2049,4097,8191"
for k in 1 2; do
  timeout 100 /tmp/bench_old $A --csv $OUT/old$k.csv > /dev/null 2>&1; el "old $k rc=$?"
  timeout 100 $B/bench/rmsnorm-bench $A --csv $OUT/new$k.csv > /dev/null 2>&1; el "new $k rc=$?"
done
$B/kernels/tests/test_dispatch > $OUT/dispatch.log 2>&1; el "test_dispatch rc=$? $(tail -2 $OUT/dispatch.log | tr '\n' ' ')"
timeout 100 compute-sanitizer --tool memcheck --error-exitcode 9 $B/bench/rmsnorm-bench --variant 'bwd.packed_rows*' --op backward,add_backward --dtype bf16,f32 --rows 4100 --dims 33,1025,8191 --iters 5 > $OUT/san_mem_bwd.log 2>&1
el "memcheck bwd rc=$? $(grep -E 'ERROR SUMMARY' $OUT/san_mem_bwd.log | tail -1)"
timeout 150 compute-sanitizer --tool racecheck --error-exitcode 9 $B/bench/rmsnorm-bench --variant 'bwd.packed_rows*' --op backward,add_backward --dtype bf16 --rows 1001 --dims 33,1025 --iters 5 > $OUT/san_race_bwd.log 2>&1
el "racecheck bwd rc=$? $(grep -E 'RACECHECK SUMMARY' $OUT/san_race_bwd.log | tail -1)"
for k in 1 2; do
  timeout 120 $B/bench/rmsnorm-bench --csv $OUT/bench$k.csv > /dev/null 2>&1; el "default bench $k rc=$?"
  python3 scripts/bench_table.py $OUT/bench$k.csv > $OUT/bench_table$k.txt 2>&1
done
python3 - $OUT <<'PY'
import csv, sys, os, collections
t = collections.defaultdict(lambda: collections.defaultdict(list))
for k in (1, 2):
    for tag in ('old', 'new'):
        f = os.path.join(sys.argv[1], f'{tag}{k}.csv')
        if not os.path.exists(f): continue
        for r in csv.DictReader(open(f)):
            t[(r['op'], r['dtype'], int(r['dim']), int(r['rows']))][tag].append(float(r['ratio']))
print('op                 dtype    D      R   old            new            new/old')
for key in sorted(t):
    d = t[key]; a, b = d.get('old', []), d.get('new', [])
    f = lambda v: '/'.join(f'{x:.3f}' for x in v) or '-'
    r = f'{min(b)/max(a):.3f}-{max(b)/min(a):.3f}' if a and b else '-'
    print(f"{key[0]:18} {key[1]:5} {key[2]:5} {key[3]:6}  {f(a):13}  {f(b):13}  {r}")
PY
head -8 $OUT/bench_table1.txt; head -8 $OUT/bench_table2.txt
wait
for p in t_bwd certify replay; do el "$p $(cat $OUT/$p.rc) $(grep -E 'passed|failed|PASS|FAIL|^replay:' $OUT/$p.log | tail -3 | tr '\n' ' ' | cut -c1-400)"; grep -B3 -A12 FAILED $OUT/$p.log | head -40; done
cd $OUT && tar -czf logs.tgz *.log *.rc *.txt cert 2>/dev/null && rm -rf *.log *.rc cert; ls
el done
