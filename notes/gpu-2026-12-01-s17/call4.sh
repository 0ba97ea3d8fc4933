#!/usr/bin/env bash
# Session 17 call 4: fwd.large_d / fwd.large_d_pair fused amax (dynamic per-token FP8 beyond the y stash).
# By name against call 2's build (old: the same lean kernel with the separate amax pass), two
# alternating pairs; the lean test and the FP8 test case (every variant); the lean path case under
# racecheck / memcheck / synccheck (zero rows take the fallback's barrier); certify fwd.block_row;
# corpus replay of every forward variant; the default bench.
set -u
OUT=${OUT:-/tmp/out}; L=$OUT/logs; mkdir -p $L; B=build/gpu; O=.probe/old; t0=$(date +%s)
el() { echo "[$(( $(date +%s) - t0 ))s] $*"; }
xz -dc .probe/prebuilt.tar.xz | tar -xf - || { echo unpack failed; exit 1; }
mkdir -p $O && xz -dc .probe/old.tar.xz | tar -xf - -C $O || { echo unpack old failed; exit 1; }
el "prebuilt $(cut -c1-12 $B/PREBUILT_COMMIT) old $(cut -c1-12 $O/build/gpu/PREBUILT_COMMIT 2>/dev/null) source $(cut -c1-12 .source-commit)"
ls $O | head -3
OB=$O/build/gpu/bench/rmsnorm-bench
f=corpora/paths/fwd_large_d_fused_amax.case
for tool in racecheck memcheck synccheck; do
  timeout 120 compute-sanitizer --tool $tool --error-exitcode 9 $B/cli/rmsnorm-cert replay $f --variant "fwd.large_d*" > $L/san_lean_$tool.log 2>&1
  el "$tool lean case rc=$? $(grep -E 'passed|failed|SUMMARY' $L/san_lean_$tool.log | tr '\n' ' ' | cut -c1-160)"
done
BA="--variant fwd.large_d,fwd.large_d_pair --op forward_quant,add_forward_quant --dtype bf16 --rows 512,4096,8192,32768 --dims 20000,32768,40960,65536"
for k in 1 2; do
  timeout 60 $B/bench/rmsnorm-bench $BA --csv $L/new$k.csv > $L/new$k.txt 2>&1; el "new $k rc=$?"
  timeout 60 $OB $BA --csv $L/old$k.csv > $L/old$k.txt 2>&1; el "old $k rc=$?"
done
timeout 60 $B/bench/rmsnorm-bench --variant fwd.large_d,fwd.large_d_pair --op add_forward_quant,forward_quant --dtype f32 --rows 4096 --dims 32768,65536 --csv $L/newf16.csv > /dev/null 2>&1
timeout 60 $OB --variant fwd.large_d,fwd.large_d_pair --op add_forward_quant,forward_quant --dtype f32 --rows 4096 --dims 32768,65536 --csv $L/oldf16.csv > /dev/null 2>&1
python3 - $L > $OUT/ab_table.txt <<'PY'
import csv, sys, glob, collections, re
L = sys.argv[1]; r = collections.defaultdict(lambda: collections.defaultdict(list))
for f in sorted(glob.glob(L + '/*.csv')):
    tag = re.match(r'(new|old)', f.split('/')[-1]).group(1)
    for x in csv.DictReader(open(f)):
        r[(x['op'], x['dtype'], int(x['rows']), int(x['dim']), x['variant'][4:])][tag].append(float(x['ratio']))
print('%-18s %-5s %6s %6s %-13s %-13s %-13s %s' % ('op', 'dtype', 'R', 'D', 'variant', 'new', 'old', 'new/old'))
for k in sorted(r):
    n, o = r[k]['new'], r[k]['old']
    print('%-18s %-5s %6d %6d %-13s %-13s %-13s %.3f' % (k + ('/'.join('%.3f' % y for y in n), '/'.join('%.3f' % y for y in o), (sum(n) / len(n)) / (sum(o) / len(o)))))
PY
(RMSNORM_VARIANTS=fwd.large_d_pair timeout 300 $B/kernels/tests/test_gpu_forward -w NoTests > $L/lean_shard.log 2>&1; echo "pair shard rc=$?" > $L/lean.rc) &
(timeout 300 $B/kernels/tests/test_gpu_forward -w NoTests "forward: FP8 quantization*" > $L/fp8_shard.log 2>&1; echo "fp8 shard rc=$?" > $L/fp8.rc) &
(RMSNORM_VARIANTS=fwd.large_d timeout 300 $B/kernels/tests/test_gpu_forward -w NoTests > $L/block_shard.log 2>&1; echo "large_d shard rc=$?" > $L/block.rc) &
(timeout 300 $B/cli/rmsnorm-cert certify 'fwd.large_d*' --cases 12 --jobs 4 --out $L/cert > $L/certify.log 2>&1; echo "certify rc=$?" > $L/certify.rc) &
(timeout 300 $B/cli/rmsnorm-cert replay corpora --variant 'fwd.*' > $L/corpus.log 2>&1; echo "corpus rc=$?" > $L/corpus.rc) &
wait
for x in lean fp8 block; do el "$(cat $L/$x.rc) $(tail -3 $L/${x}_shard.log | grep -E 'passed|failed' | tr '\n' ' ')"; done
grep -B3 -A15 "FAILED" $L/*_shard.log | head -40
el "$(cat $L/certify.rc) $(grep -E 'PASS|FAIL' $L/certify.log | tail -3 | tr '\n' ' ')"
el "$(cat $L/corpus.rc) $(grep -E 'case files' $L/corpus.log | tail -1)"
timeout 60 $B/kernels/tests/test_dispatch > $L/dispatch.txt 2>&1; el "test_dispatch rc=$? $(grep -E 'passed|failed' $L/dispatch.txt | tail -1)"
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
