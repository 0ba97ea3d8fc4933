#!/usr/bin/env bash
# Session 21 call 3: fwd.shifted_row's plain forward with its next row's loads in flight (kPipe), A/B by
# name against call 2's build (.probe/bench_nopipe.xz), two alternating pairs, plain forward
# only (bf16, f16, f32), fwd.packed_rows beside it; then the same tests as call 2.
set -u
OUT=${OUT:-/tmp/out}; B=build/gpu; t0=$(date +%s)
el() { echo "[$(( $(date +%s) - t0 ))s] $*"; }
xz -dc .probe/prebuilt.tar.xz | tar -xf - || { echo unpack failed; exit 1; }
xz -dc .probe/bench_nopipe.xz > /tmp/bench_nopipe && chmod +x /tmp/bench_nopipe
el "build $(cut -c1-12 $B/PREBUILT_COMMIT) source $(cut -c1-12 .source-commit)"
A="--op forward --dtype bf16,f16,f32 --rows 512,4096,8192,32768 --dims 513,1025,2049,4097,6145,8191"
for k in 1 2; do
  timeout 100 /tmp/bench_nopipe --variant fwd.shifted_row $A --csv $OUT/nopipe$k.csv > /dev/null 2>&1; el "no pipe $k rc=$?"
  timeout 100 $B/bench/rmsnorm-bench --variant fwd.shifted_row,fwd.packed_rows $A --csv $OUT/pipe$k.csv > /dev/null 2>&1; el "pipe $k rc=$?"
done
python3 - $OUT <<'PY'
import csv, sys, os, collections
t = collections.defaultdict(lambda: collections.defaultdict(list))
for k in (1, 2):
    for tag in ('nopipe', 'pipe'):
        f = os.path.join(sys.argv[1], f'{tag}{k}.csv')
        if not os.path.exists(f): continue
        for r in csv.DictReader(open(f)):
            name = ('shifted_' + tag) if r['variant'] == 'fwd.shifted_row' else 'packed'
            t[(r['op'], r['dtype'], int(r['dim']), int(r['rows']))][name].append(float(r['ratio']))
print('op          dtype    D      R   nopipe         pipe           packed        pipe/nopipe  pipe/packed')
for key in sorted(t):
    d = t[key]
    def f(n): return '/'.join(f'{x:.3f}' for x in d.get(n, [])) or '-'
    a, b, c = d.get('shifted_nopipe', []), d.get('shifted_pipe', []), d.get('packed', [])
    r1 = f'{min(b)/max(a):.3f}-{max(b)/min(a):.3f}' if a and b else '-'
    r2 = f'{min(b)/max(c):.3f}-{max(b)/min(c):.3f}' if c and b else '-'
    print(f"{key[0]:11} {key[1]:5} {key[2]:5} {key[3]:6}  {f('shifted_nopipe'):13}  {f('shifted_pipe'):13}  {f('packed'):13} {r1:12} {r2}")
PY
TF=$B/kernels/tests/test_gpu_forward
(timeout 420 $TF -w NoTests "forward: fwd.shifted_row*" > $OUT/t_shifted.log 2>&1; echo "rc=$?" > $OUT/t_shifted.rc) &
(RMSNORM_VARIANTS=fwd.shifted_row timeout 420 $TF -w NoTests "forward: seed widths*,forward: layouts*,forward: special rows*,forward: fused add,forward: conventions*,forward: R = 0*" > $OUT/t_generic.log 2>&1; echo "rc=$?" > $OUT/t_generic.rc) &
(RMSNORM_VARIANTS=fwd.shifted_row timeout 420 $TF -w NoTests "[big]" > $OUT/t_big.log 2>&1; echo "rc=$?" > $OUT/t_big.rc) &
(timeout 420 $B/cli/rmsnorm-cert certify fwd.shifted_row --cases 24 --jobs 3 --out $OUT/cert > $OUT/certify.log 2>&1; echo "rc=$?" > $OUT/certify.rc) &
(timeout 420 $B/cli/rmsnorm-cert replay corpora --variant fwd.shifted_row --quiet > $OUT/replay.log 2>&1; echo "rc=$?" > $OUT/replay.rc) &
$B/kernels/tests/test_dispatch > $OUT/dispatch.log 2>&1; el "test_dispatch rc=$? $(tail -2 $OUT/dispatch.log | tr '\n' ' ')"
$B/kernels/tests/test_launch_configs > $OUT/configs.log 2>&1; el "test_launch_configs rc=$? $(tail -1 $OUT/configs.log)"
for tool in memcheck racecheck; do
  for dt in bf16 f32; do
    timeout 150 compute-sanitizer --tool $tool --error-exitcode 9 $B/bench/rmsnorm-bench --variant fwd.shifted_row --op forward,add_forward --dtype $dt --rows 4100 --dims 1025,4097 --iters 2 > $OUT/san_${tool}_$dt.log 2>&1
    el "$tool $dt rc=$? $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' $OUT/san_${tool}_$dt.log | tail -1)"
  done
done
wait
for p in t_shifted t_generic t_big certify replay; do el "$p $(cat $OUT/$p.rc) $(grep -E 'passed|failed|PASS|FAIL|^replay:' $OUT/$p.log | tail -3 | tr '\n' ' ' | cut -c1-300)"; grep -B3 -A10 FAILED $OUT/$p.log | head -30; done
cd $OUT && tar -czf logs.tgz *.log *.rc cert *.csv 2>/dev/null && rm -rf *.log *.rc cert nopipe*.csv; ls
el done
