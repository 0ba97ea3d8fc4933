#!/usr/bin/env bash
# Session 17 call 5 (a probe build of d6d50d4 with two environment switches): (a) the lean-y
# kernel (fused amax) at D <= 8192 against the held-y block_row FP8 forms (RMSNORM_PROBE_LEAN_MIN_DIM);
# (b) the fused amax without the y stash against the stash where it fits (RMSNORM_PROBE_NO_STASH),
# fwd.large_d and fwd.large_d_pair. Two alternating pairs each.
set -u
OUT=${OUT:-/tmp/out}; L=$OUT/logs; mkdir -p $L; B=build/gpu; t0=$(date +%s)
el() { echo "[$(( $(date +%s) - t0 ))s] $*"; }
xz -dc .probe/prebuilt.tar.xz | tar -xf - || { echo unpack failed; exit 1; }
el "prebuilt $(cut -c1-12 $B/PREBUILT_COMMIT) source $(cut -c1-12 .source-commit)"
A="--variant fwd.block_row --op forward_quant,add_forward_quant --dtype bf16 --rows 512,4096,8192,32768 --dims 2048,4096,5120,8192"
S="--variant fwd.large_d,fwd.large_d_pair --op forward_quant,add_forward_quant --dtype bf16 --rows 512,4096,32768 --dims 8192,16384,24576,32768"
F="--variant fwd.large_d,fwd.large_d_pair --op forward_quant,add_forward_quant --dtype f32 --rows 4096 --dims 8192,16384,24576"
for k in 1 2; do
  timeout 60 $B/bench/rmsnorm-bench $A --csv $L/a_held$k.csv > /dev/null 2>&1; el "held $k rc=$?"
  RMSNORM_PROBE_LEAN_MIN_DIM=1 timeout 60 $B/bench/rmsnorm-bench $A --csv $L/a_lean$k.csv > /dev/null 2>&1; el "lean $k rc=$?"
  timeout 90 $B/bench/rmsnorm-bench $S --csv $L/s_stash$k.csv > /dev/null 2>&1; el "stash $k rc=$?"
  RMSNORM_PROBE_NO_STASH=1 timeout 90 $B/bench/rmsnorm-bench $S --csv $L/s_fused$k.csv > /dev/null 2>&1; el "fused $k rc=$?"
done
timeout 60 $B/bench/rmsnorm-bench $F --csv $L/f_stash1.csv > /dev/null 2>&1
RMSNORM_PROBE_NO_STASH=1 timeout 60 $B/bench/rmsnorm-bench $F --csv $L/f_fused1.csv > /dev/null 2>&1
el "f32 rc=$?"
RMSNORM_PROBE_NO_STASH=1 RMSNORM_PROBE_LEAN_MIN_DIM=1 timeout 200 $B/cli/rmsnorm-cert replay corpora --variant 'fwd.block_row,fwd.large_d*' > $L/corpus_probe.log 2>&1
el "corpus (both switches) rc=$? $(grep -E 'case files' $L/corpus_probe.log | tail -1)"
python3 - $L > $OUT/ab_table.txt <<'PY'
import csv, sys, glob, collections, re
L = sys.argv[1]; r = collections.defaultdict(lambda: collections.defaultdict(list))
for f in sorted(glob.glob(L + '/*.csv')):
    tag = re.match(r'[asf]_([a-z]+)', f.split('/')[-1]).group(1)
    for x in csv.DictReader(open(f)):
        r[(x['op'], x['dtype'], int(x['rows']), int(x['dim']), x['variant'][4:])][tag].append(float(x['ratio']))
for k in sorted(r):
    d = r[k]; a, b = ('lean', 'held') if 'lean' in d else ('fused', 'stash')
    n, o = d[a], d[b]
    print('%-18s %-5s %6d %6d %-13s %s %-13s %s %-13s %.3f' % (k + (a, '/'.join('%.3f' % y for y in n), b, '/'.join('%.3f' % y for y in o), (sum(n) / len(n)) / (sum(o) / len(o)))))
PY
cd $OUT && tar -czf logs.tgz logs && rm -rf logs; cd - >/dev/null
el done
cat $OUT/ab_table.txt
