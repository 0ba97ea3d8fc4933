#!/usr/bin/env bash
# Session 22 call 1: fwd.packed_rows with FP8 outputs (static, per token, per block of 128).
# By name against fwd.realigned_row and fwd.element_row (the FP8 paths of odd D until now), two
# alternating runs (per token, the bench's default), one run per block; then the new GPU test
# case, fwd.packed_rows' old odd-width case, the generic FP8 / layouts / special rows / R = 0
# cases narrowed to it, certify (24 cases), the corpus replay (fwd.packed_rows and
# fwd.shifted_row: session 21's three regression cases never ran on the H200), memcheck and
# racecheck of the three FP8 modes, test_launch_configs and test_dispatch.
set -u
OUT=${OUT:-/tmp/out}; B=build/gpu; t0=$(date +%s)
el() { echo "[$(( $(date +%s) - t0 ))s] $*"; }
xz -dc .probe/prebuilt.tar.xz | tar -xf - || { echo unpack failed; exit 1; }
el "build $(cut -c1-12 $B/PREBUILT_COMMIT) source $(cut -c1-12 .source-commit)"
TF=$B/kernels/tests/test_gpu_forward
(timeout 500 $TF -w NoTests "forward: fwd.packed_rows, FP8*" > $OUT/t_fp8.log 2>&1; echo "rc=$?" > $OUT/t_fp8.rc) &
(timeout 500 $TF -w NoTests "forward: fwd.packed_rows, odd widths*" > $OUT/t_odd.log 2>&1; echo "rc=$?" > $OUT/t_odd.rc) &
(RMSNORM_VARIANTS=fwd.packed_rows timeout 500 $TF -w NoTests "forward: FP8 quantization*,forward: seed widths*,forward: layouts*,forward: special rows*,forward: conventions*,forward: R = 0*" > $OUT/t_generic.log 2>&1; echo "rc=$?" > $OUT/t_generic.rc) &
(timeout 500 $B/cli/rmsnorm-cert certify fwd.packed_rows --cases 24 --jobs 3 --out $OUT/cert > $OUT/certify.log 2>&1; echo "rc=$?" > $OUT/certify.rc) &
(timeout 500 $B/cli/rmsnorm-cert replay corpora --variant 'fwd.packed_rows,fwd.shifted_row' --quiet > $OUT/replay.log 2>&1; echo "rc=$?" > $OUT/replay.rc) &
A="--op forward_quant,add_forward_quant --dtype bf16,f32 --rows 512,4096,8192,32768 --dims 513,1025,2049,4097,6145,8191"
V=fwd.packed_rows,fwd.realigned_row,fwd.element_row
for k in 1 2; do
  timeout 150 $B/bench/rmsnorm-bench --variant $V $A --csv $OUT/byname$k.csv > /dev/null 2>&1; el "by name (token) $k rc=$?"
done
timeout 150 $B/bench/rmsnorm-bench --variant $V --quant block --op forward_quant,add_forward_quant --dtype bf16 --rows 4096,32768 --dims 1025,4097,8191 --csv $OUT/byname_block.csv > /dev/null 2>&1; el "by name (block) rc=$?"
$B/kernels/tests/test_dispatch > $OUT/dispatch.log 2>&1; el "test_dispatch rc=$? $(tail -2 $OUT/dispatch.log | tr '\n' ' ')"
$B/kernels/tests/test_launch_configs > $OUT/configs.log 2>&1; el "test_launch_configs rc=$? $(tail -1 $OUT/configs.log)"
for tool in memcheck racecheck; do
  for q in token static block; do
    timeout 150 compute-sanitizer --tool $tool --error-exitcode 9 $B/bench/rmsnorm-bench --variant fwd.packed_rows --quant $q --op forward_quant,add_forward_quant --dtype bf16,f32 --rows 4100 --dims 33,1025,8191 --iters 5 > $OUT/san_${tool}_$q.log 2>&1
    el "$tool $q rc=$? $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' $OUT/san_${tool}_$q.log | tail -1)"
  done
done
python3 - $OUT <<'PY'
import csv, sys, os, collections
t = collections.defaultdict(lambda: collections.defaultdict(list))
for tag in ('byname1', 'byname2', 'byname_block'):
    f = os.path.join(sys.argv[1], tag + '.csv')
    if not os.path.exists(f): continue
    for r in csv.DictReader(open(f)):
        q = 'block' if tag == 'byname_block' else 'token'
        t[(r['op'], q, r['dtype'], int(r['dim']), int(r['rows']))][r['variant'].split('.')[1]].append(float(r['ratio']))
print('op                 q     dtype    D      R   packed_rows    realigned_row  element_row    packed/best-other')
for key in sorted(t):
    d = t[key]
    def f(n): return '/'.join(f'{x:.3f}' for x in d.get(n, [])) or '-'
    p = d.get('packed_rows', [])
    others = [x for n in ('realigned_row', 'element_row') for x in d.get(n, [])]
    best = max((sum(d[n]) / len(d[n]) for n in ('realigned_row', 'element_row') if d.get(n)), default=0)
    r = f'{sum(p) / len(p) / best:.3f}' if p and best else '-'
    print(f"{key[0]:18} {key[1]:5} {key[2]:5} {key[3]:5} {key[4]:6}  {f('packed_rows'):13}  {f('realigned_row'):13}  {f('element_row'):13}  {r}")
PY
wait
for p in t_fp8 t_odd t_generic certify replay; do el "$p $(cat $OUT/$p.rc) $(grep -E 'passed|failed|PASS|FAIL|^replay:' $OUT/$p.log | tail -3 | tr '\n' ' ' | cut -c1-300)"; grep -B3 -A12 FAILED $OUT/$p.log | head -40; done
cd $OUT && tar -czf logs.tgz *.log *.rc cert 2>/dev/null && rm -rf *.log *.rc cert; ls
el done
