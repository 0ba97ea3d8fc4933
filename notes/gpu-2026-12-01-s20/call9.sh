#!/usr/bin/env bash
# Session 20 call 9: fwd.block_row's staggered first wave (fwd_regs_stagger_kernel). A/B by name
# against call 2's build (old/, no stagger): bf16 D = 2048-8192 two alternating pairs, f16 one; one
# process per (D, dtype), R ascending. Then side by side: the new GPU test case and the block_row
# cases of test_gpu_forward, test_dispatch, certify fwd.block_row, its corpus replay; then
# memcheck and racecheck of the stagger kernel (the bench on 4 waves of rows).
set -u
OUT=${OUT:-/tmp/out}; B=build/gpu; O=old/build/gpu; t0=$(date +%s)
el() { echo "[$(( $(date +%s) - t0 ))s] $*"; }
xz -dc .probe/prebuilt.tar.xz | tar -xf - || { echo unpack failed; exit 1; }
mkdir -p old && xz -dc .probe/old.tar.xz | tar -C old -xf - || { echo unpack old failed; exit 1; }
el "new $(cut -c1-12 $B/PREBUILT_COMMIT) old $(cut -c1-12 $O/PREBUILT_COMMIT) source $(cut -c1-12 .source-commit)"
R=512,2048,4096,8192,16384,32768
ab() {  # build tag pair dtype D
  timeout 60 $1/bench/rmsnorm-bench --variant fwd.block_row --op forward --dtype $4 --rows $R --dims $5 --csv $OUT/ab_$2_$3_$4_$5.csv > /dev/null 2>&1 || el "bench rc=$? $*"
}
for k in 1 2; do
  for D in 2048 4096 5120 8192; do ab $O old $k bf16 $D; ab $B new $k bf16 $D; done
done
for D in 4096 8192; do ab $O old 1 f16 $D; ab $B new 1 f16 $D; done
el "A/B done"
python3 - $OUT <<'PY'
import csv, glob, sys, os, collections
t = collections.defaultdict(dict)
for f in glob.glob(os.path.join(sys.argv[1], 'ab_*.csv')):
    _, tag, k, dt, D = os.path.basename(f)[:-4].split('_')
    for r in csv.DictReader(open(f)):
        t[(dt, int(r['dim']), int(r['rows']), k)][tag] = (float(r['time_us']), float(r['copy_us']))
print('dtype   D      R  pair   old_us  new_us  old/copy new/copy  speedup')
for key in sorted(t):
    o, n = t[key].get('old'), t[key].get('new')
    if o and n: print(f"{key[0]:5} {key[1]:5} {key[2]:6} {key[3]:>4} {o[0]:8.2f} {n[0]:7.2f}  {o[1]/o[0]:7.3f}  {n[1]/n[0]:7.3f}  {o[0]/n[0]:6.3f}")
PY
TF=$B/kernels/tests/test_gpu_forward
(timeout 330 $TF -w NoTests "forward: fwd.block_row's staggered first wave*" > $OUT/t_stagger.log 2>&1; echo "rc=$?" > $OUT/t_stagger.rc) &
(RMSNORM_VARIANTS=fwd.block_row timeout 330 $TF -w NoTests "forward: fwd.block_row over more rows than a wave*,forward: R = 0 is a no-op*,forward: seed widths*,forward: layouts*,forward: conventions*" > $OUT/t_block.log 2>&1; echo "rc=$?" > $OUT/t_block.rc) &
(timeout 330 $B/cli/rmsnorm-cert certify fwd.block_row --cases 12 --jobs 3 --out $OUT/cert > $OUT/certify.log 2>&1; echo "rc=$?" > $OUT/certify.rc) &
(timeout 330 $B/cli/rmsnorm-cert replay corpora --variant fwd.block_row --quiet > $OUT/replay.log 2>&1; echo "rc=$?" > $OUT/replay.rc) &
$B/kernels/tests/test_dispatch > $OUT/dispatch.log 2>&1; el "test_dispatch rc=$? $(tail -2 $OUT/dispatch.log | tr '\n' ' ')"
for tool in memcheck racecheck; do
  timeout 120 compute-sanitizer --tool $tool --error-exitcode 9 $B/bench/rmsnorm-bench --variant fwd.block_row --op forward --dtype bf16 --rows 4224 --dims 4096 --iters 2 > $OUT/san_$tool.log 2>&1
  el "$tool rc=$? $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' $OUT/san_$tool.log | tail -1)"
done
wait
for p in t_stagger t_block certify replay; do el "$p $(cat $OUT/$p.rc) $(grep -E 'passed|failed|PASS|FAIL|^replay:' $OUT/$p.log | tail -2 | tr '\n' ' ' | cut -c1-220)"; grep -B3 -A8 FAILED $OUT/$p.log | head -20; done
cd $OUT && tar -czf logs.tgz *.log *.rc cert ab_*.csv 2>/dev/null && rm -rf *.log *.rc cert ab_*.csv; ls
el done
