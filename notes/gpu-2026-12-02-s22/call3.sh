#!/usr/bin/env bash
# Session 22 call 3: fwd.packed_rows with predicated element accesses (no branch per column) and
# the fused add's residual stored from its one rounding. A/B by name against call 2's build
# (.probe/bench_dd81046.xz), two alternating pairs, every forward op, bf16 and fp32, D = 513-8191,
# R = 4096 and 32768; then the FP8 and odd-width GPU test cases, the generic cases narrowed to it,
# the [big] case, certify, the corpus replay, memcheck (every op and FP8 mode at tails, exact-size
# buffers) and racecheck, test_dispatch, and the default bench once.
set -u
OUT=${OUT:-/tmp/out}; B=build/gpu; t0=$(date +%s)
el() { echo "[$(( $(date +%s) - t0 ))s] $*"; }
xz -dc .probe/prebuilt.tar.xz | tar -xf - || { echo unpack failed; exit 1; }
xz -dc .probe/bench_dd81046.xz > /tmp/bench_old && chmod +x /tmp/bench_old
el "build $(cut -c1-12 $B/PREBUILT_COMMIT) source $(cut -c1-12 .source-commit)"
TF=$B/kernels/tests/test_gpu_forward
(timeout 540 $TF -w NoTests 'forward: fwd.packed_rows\, FP8*' > $OUT/t_fp8.log 2>&1; echo "rc=$?" > $OUT/t_fp8.rc) &
(timeout 540 $TF -w NoTests 'forward: fwd.packed_rows\, odd widths*' > $OUT/t_odd.log 2>&1; echo "rc=$?" > $OUT/t_odd.rc) &
(RMSNORM_VARIANTS=fwd.packed_rows timeout 540 $TF -w NoTests "forward: FP8 quantization*,forward: seed widths*,forward: layouts*,forward: special rows*,forward: fused add,forward: conventions*,forward: R = 0*,[big]" > $OUT/t_generic.log 2>&1; echo "rc=$?" > $OUT/t_generic.rc) &
(timeout 540 $B/cli/rmsnorm-cert certify fwd.packed_rows --cases 24 --jobs 2 --out $OUT/cert > $OUT/certify.log 2>&1; echo "rc=$?" > $OUT/certify.rc) &
(timeout 540 $B/cli/rmsnorm-cert replay corpora --variant 'fwd.packed_rows' --quiet > $OUT/replay.log 2>&1; echo "rc=$?" > $OUT/replay.rc) &
A="--variant fwd.packed_rows --op forward,add_forward,forward_quant,add_forward_quant --dtype bf16,f32 --rows 4096,32768 --dims 513,1025,2049,4097,8191"
for k in 1 2; do
  timeout 100 /tmp/bench_old $A --csv $OUT/old$k.csv > /dev/null 2>&1; el "old $k rc=$?"
  timeout 100 $B/bench/rmsnorm-bench $A --csv $OUT/new$k.csv > /dev/null 2>&1; el "new $k rc=$?"
done
$B/kernels/tests/test_dispatch > $OUT/dispatch.log 2>&1; el "test_dispatch rc=$? $(tail -2 $OUT/dispatch.log | tr '\n' ' ')"
S="--dtype bf16,f32 --rows 4100 --dims 33,1025,8191 --iters 5"
for q in token static block; do
  timeout 100 compute-sanitizer --tool memcheck --error-exitcode 9 $B/bench/rmsnorm-bench --variant fwd.packed_rows --quant $q --op forward,add_forward,forward_quant,add_forward_quant $S > $OUT/san_mem_fwd_$q.log 2>&1
  el "memcheck fwd $q rc=$? $(grep -E 'ERROR SUMMARY' $OUT/san_mem_fwd_$q.log | tail -1)"
done
timeout 150 compute-sanitizer --tool racecheck --error-exitcode 9 $B/bench/rmsnorm-bench --variant fwd.packed_rows --quant block --op add_forward,add_forward_quant,forward_quant --dtype bf16 --rows 1001 --dims 33,1025 --iters 5 > $OUT/san_race_fwd.log 2>&1
el "racecheck fwd rc=$? $(grep -E 'RACECHECK SUMMARY' $OUT/san_race_fwd.log | tail -1)"
timeout 120 $B/bench/rmsnorm-bench --csv $OUT/bench1.csv > /dev/null 2>&1; el "default bench rc=$?"
python3 scripts/bench_table.py $OUT/bench1.csv > $OUT/bench_table1.txt 2>&1
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
head -8 $OUT/bench_table1.txt
wait
for p in t_fp8 t_odd t_generic certify replay; do el "$p $(cat $OUT/$p.rc) $(grep -E 'passed|failed|PASS|FAIL|^replay:' $OUT/$p.log | tail -3 | tr '\n' ' ' | cut -c1-400)"; grep -B3 -A12 FAILED $OUT/$p.log | head -40; done
cd $OUT && tar -czf logs.tgz *.log *.rc *.txt cert 2>/dev/null && rm -rf *.log *.rc cert; ls
el done
