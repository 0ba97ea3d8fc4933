#!/usr/bin/env bash
# Session 20 call 11: the stagger for fwd.block_row's other 16-bit forms (fused add, FP8, both;
# candidate build) A/B by name against call 10's build (old/: the plain forward's stagger only),
# two alternating pairs, one process per (op, D), R ascending; then the stagger's GPU test case
# (with the new forms' shapes) and test_dispatch.
set -u
OUT=${OUT:-/tmp/out}; B=build/gpu; O=old/build/gpu; t0=$(date +%s)
el() { echo "[$(( $(date +%s) - t0 ))s] $*"; }
xz -dc .probe/prebuilt.tar.xz | tar -xf - || { echo unpack failed; exit 1; }
mkdir -p old && xz -dc .probe/old.tar.xz | tar -C old -xf - || { echo unpack old failed; exit 1; }
el "new $(cut -c1-12 $B/PREBUILT_COMMIT) old $(cut -c1-12 $O/PREBUILT_COMMIT) source $(cut -c1-12 .source-commit)"
ab() {  # build tag pair op D rows
  timeout 60 $1/bench/rmsnorm-bench --variant fwd.block_row --op $4 --dtype bf16 --rows $6 --dims $5 --csv $OUT/ab_$2_$3_$4_$5.csv > /dev/null 2>&1 || el "bench rc=$? $*"
}
for k in 1 2; do
  for op in add_forward add_forward_quant forward_quant; do
    for D in 2048 4096 5120 8192; do ab $O old $k $op $D 2048,4096,8192,16384,32768; ab $B new $k $op $D 2048,4096,8192,16384,32768; done
  done
  ab $O old $k add_forward 16384 1024,4096,8192,32768; ab $B new $k add_forward 16384 1024,4096,8192,32768
done
el "A/B done"
python3 - $OUT <<'PY'
import csv, glob, sys, os, collections
t = collections.defaultdict(dict)
for f in glob.glob(os.path.join(sys.argv[1], 'ab_*.csv')):
    parts = os.path.basename(f)[:-4].split('_')
    tag, k = parts[1], parts[2]
    for r in csv.DictReader(open(f)):
        t[(r['op'], int(r['dim']), int(r['rows']), k)][tag] = (float(r['time_us']), float(r['copy_us']))
print('op                  D      R  pair   old_us  new_us  old/copy new/copy  speedup')
for key in sorted(t):
    o, n = t[key].get('old'), t[key].get('new')
    if o and n: print(f"{key[0]:17} {key[1]:5} {key[2]:6} {key[3]:>4} {o[0]:8.2f} {n[0]:7.2f}  {o[1]/o[0]:7.3f}  {n[1]/n[0]:7.3f}  {o[0]/n[0]:6.3f}")
PY
TF=$B/kernels/tests/test_gpu_forward
(timeout 300 $TF -w NoTests "forward: fwd.block_row's staggered first wave*" > $OUT/t_stagger.log 2>&1; echo "rc=$?" > $OUT/t_stagger.rc) &
$B/kernels/tests/test_dispatch > $OUT/dispatch.log 2>&1; el "test_dispatch rc=$? $(tail -2 $OUT/dispatch.log | tr '\n' ' ')"
wait
for p in t_stagger; do el "$p $(cat $OUT/$p.rc) $(grep -E 'passed|failed' $OUT/$p.log | tail -2 | tr '\n' ' ')"; grep -B3 -A8 FAILED $OUT/$p.log | head -30; done
cd $OUT && tar -czf logs.tgz *.log *.rc ab_*.csv && rm -f *.log *.rc ab_*.csv; ls
el done
