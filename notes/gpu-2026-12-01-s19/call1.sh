#!/usr/bin/env bash
# Session 19 call 1: the small-R and cluster hints, by name. (a) bwd.cluster_rows against
# bwd.staged_cluster past one block's row (16-bit D > 16384, fp32 D > 8192), after session 18's
# 16-byte partial row in bwd.cluster_rows; (b) the FP8 forms at R <= 64 and D >= 12288, which the
# dispatcher sends to fwd.large_d (12-18 us at D = 65536), against fwd.cluster_row / fwd.block_row;
# (c) the plain forward and fused add at D = 8192-16384, R <= 64: fwd.block_row against
# fwd.cluster_row. One process per (op, dtype, D), R ascending (session 18's order effect: a
# shape right after a larger one's buffers were freed ran 8-20 % slow). Two runs each.
set -u
OUT=${OUT:-/tmp/out}; B=build/gpu; t0=$(date +%s)
el() { echo "[$(( $(date +%s) - t0 ))s] $*"; }
xz -dc .probe/prebuilt.tar.xz | tar -xf - || { echo unpack failed; exit 1; }
el "prebuilt $(cut -c1-12 $B/PREBUILT_COMMIT) source $(cut -c1-12 .source-commit)"
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,power.draw --format=csv,noheader
bench() { timeout 60 $B/bench/rmsnorm-bench "$@" > /dev/null 2>&1 || el "bench rc=$? $*"; }
for k in 1 2; do
  for op in backward add_backward; do
    for D in 16392 24576 32768 65536; do
      bench --variant 'bwd.cluster_rows.vec8,bwd.staged_cluster.vec8' --op $op --dtype bf16 --rows 1,4,16,32,64,128,512,4096 --dims $D --csv $OUT/bwd_bf16_${op}_${D}_$k.csv
    done
    for D in 12288 16392 32768; do
      bench --variant 'bwd.cluster_rows.vec8,bwd.staged_cluster.vec8' --op $op --dtype f32 --rows 1,16,64,512,4096 --dims $D --csv $OUT/bwd_f32_${op}_${D}_$k.csv
    done
  done
  el "backward run $k"
  for op in forward_quant add_forward_quant; do
    for D in 12288 16384 24576 32768 65536; do
      bench --variant 'fwd.cluster_row,fwd.large_d,fwd.large_d_pair,fwd.block_row' --op $op --dtype bf16 --rows 1,4,16,64 --dims $D --csv $OUT/fq_${op}_${D}_$k.csv
    done
  done
  for op in forward add_forward; do
    for D in 8192 12288 16384; do
      bench --variant 'fwd.cluster_row,fwd.block_row' --op $op --dtype bf16 --rows 1,4,16,64 --dims $D --csv $OUT/fp_${op}_${D}_$k.csv
    done
  done
  el "forward run $k"
done
for k in 1 2; do
  { head -1 $(ls $OUT/bwd_*_$k.csv | head -1); for f in $OUT/bwd_*_$k.csv $OUT/fq_*_$k.csv $OUT/fp_*_$k.csv; do tail -n +2 $f; done; } > $OUT/all$k.csv
done
python3 - $OUT/all1.csv $OUT/all2.csv > $OUT/table.txt <<'PY'
import csv, sys, collections
t = collections.defaultdict(dict)
for k, f in enumerate(sys.argv[1:]):
    for r in csv.DictReader(open(f)):
        if r['note'].startswith('skipped'): continue
        t[(r['op'], r['dtype'], int(r['dim']), int(r['rows']))].setdefault(r['variant'], []).append(float(r['time_us']))
for key in sorted(t):
    v = t[key]; best = min(v, key=lambda n: min(v[n]))
    print('%-18s %-4s D=%-6d R=%-5d ' % key + '  '.join('%s %s' % (n.replace('.vec8', ''), '/'.join('%.2f' % x for x in v[n])) for n in sorted(v)) + '   best ' + best)
PY
cd $OUT && tar -czf logs.tgz *.csv && find . -maxdepth 1 -type f ! -name logs.tgz ! -name table.txt ! -name all1.csv ! -name all2.csv -delete; cd - >/dev/null
el done
cat $OUT/table.txt
