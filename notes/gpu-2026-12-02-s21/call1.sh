#!/usr/bin/env bash
# Session 21 call 1: fwd.shifted_row's first device run. By name against fwd.packed_rows,
# fwd.realigned_row and fwd.element_row (forward and fused add, bf16 and f32, odd D, R = 64-32768,
# two runs); then its GPU test case, the generic forward cases narrowed to it (and the 2^31 case),
# certify, corpus replay, memcheck and racecheck, test_launch_configs and test_dispatch.
set -u
OUT=${OUT:-/tmp/out}; B=build/gpu; t0=$(date +%s)
el() { echo "[$(( $(date +%s) - t0 ))s] $*"; }
xz -dc .probe/prebuilt.tar.xz | tar -xf - || { echo unpack failed; exit 1; }
el "build $(cut -c1-12 $B/PREBUILT_COMMIT) source $(cut -c1-12 .source-commit)"
V='fwd.shifted_row,fwd.packed_rows,fwd.realigned_row,fwd.element_row'
for k in 1 2; do
  timeout 150 $B/bench/rmsnorm-bench --variant "$V" --op forward,add_forward --dtype bf16,f32 --rows 64,512,4096,8192,32768 \
    --dims 513,1025,2049,4097,8191 --csv $OUT/byname$k.csv > $OUT/byname$k.log 2>&1; el "by name run $k rc=$?"
done
python3 - $OUT <<'PY'
import csv, sys, os, collections
t = collections.defaultdict(lambda: collections.defaultdict(list))
for k in (1, 2):
    f = os.path.join(sys.argv[1], f'byname{k}.csv')
    if not os.path.exists(f): continue
    for r in csv.DictReader(open(f)):
        t[(r['op'], r['dtype'], int(r['dim']), int(r['rows']))][r['variant']].append(float(r['ratio']))
print('op          dtype    D      R   shifted        packed         realigned      element    best-other/shifted(time)')
for key in sorted(t):
    d = t[key]
    def f(n): return '/'.join(f'{x:.3f}' for x in d.get(n, [])) or '-'
    s = d.get('fwd.shifted_row', [])
    others = [max(d[n]) for n in ('fwd.packed_rows','fwd.realigned_row','fwd.element_row') if n in d]
    sp = f'{min(s)/max(others):.3f}' if s and others else '-'
    print(f"{key[0]:11} {key[1]:5} {key[2]:5} {key[3]:6}  {f('fwd.shifted_row'):13}  {f('fwd.packed_rows'):13}  {f('fwd.realigned_row'):13}  {f('fwd.element_row'):13}  {sp}")
PY
TF=$B/kernels/tests/test_gpu_forward
(timeout 400 $TF -w NoTests "forward: fwd.shifted_row*" > $OUT/t_shifted.log 2>&1; echo "rc=$?" > $OUT/t_shifted.rc) &
(RMSNORM_VARIANTS=fwd.shifted_row timeout 400 $TF -w NoTests "forward: seed widths*,forward: layouts*,forward: special rows*,forward: fused add,forward: conventions*,forward: R = 0*" > $OUT/t_generic.log 2>&1; echo "rc=$?" > $OUT/t_generic.rc) &
(RMSNORM_VARIANTS=fwd.shifted_row timeout 400 $TF -w NoTests "[big]" > $OUT/t_big.log 2>&1; echo "rc=$?" > $OUT/t_big.rc) &
(timeout 400 $B/cli/rmsnorm-cert certify fwd.shifted_row --cases 12 --jobs 3 --out $OUT/cert > $OUT/certify.log 2>&1; echo "rc=$?" > $OUT/certify.rc) &
(timeout 400 $B/cli/rmsnorm-cert replay corpora --variant fwd.shifted_row --quiet > $OUT/replay.log 2>&1; echo "rc=$?" > $OUT/replay.rc) &
$B/kernels/tests/test_dispatch > $OUT/dispatch.log 2>&1; el "test_dispatch rc=$? $(tail -2 $OUT/dispatch.log | tr '\n' ' ')"
$B/kernels/tests/test_launch_configs > $OUT/configs.log 2>&1; el "test_launch_configs rc=$? $(tail -1 $OUT/configs.log)"
for tool in memcheck racecheck; do
  for dt in bf16 f32; do
    timeout 150 compute-sanitizer --tool $tool --error-exitcode 9 $B/bench/rmsnorm-bench --variant fwd.shifted_row --op forward,add_forward --dtype $dt --rows 4100 --dims 1025,4097 --iters 2 > $OUT/san_${tool}_$dt.log 2>&1
    el "$tool $dt rc=$? $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' $OUT/san_${tool}_$dt.log | tail -1)"
  done
done
wait
for p in t_shifted t_generic t_big certify replay; do el "$p $(cat $OUT/$p.rc) $(grep -E 'passed|failed|PASS|FAIL|^replay:|skipped' $OUT/$p.log | tail -3 | tr '\n' ' ' | cut -c1-300)"; grep -B3 -A10 FAILED $OUT/$p.log | head -30; done
cd $OUT && tar -czf logs.tgz *.log *.rc cert *.csv 2>/dev/null && rm -rf *.log *.rc cert; ls
el done
