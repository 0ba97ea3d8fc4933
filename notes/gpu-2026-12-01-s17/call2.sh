#!/usr/bin/env bash
# Session 17 call 2 (a probe build: RMSNORM_PROBE_LEAN_MIN_DIM sends 16-bit FP8 rows from that D
# (R > 128) to the lean-y kernel): the lean test shard (llama shape fixed); by name at R = 1024 /
# 2048 against the pair (the hint's threshold); the lean kernel against the held-y kernel at
# D <= 8192 (two alternating pairs); corpus replay of fwd.block_row with the lean form everywhere.
set -u
OUT=${OUT:-/tmp/out}; L=$OUT/logs; mkdir -p $L; B=build/gpu; t0=$(date +%s)
el() { echo "[$(( $(date +%s) - t0 ))s] $*"; }
xz -dc .probe/prebuilt.tar.xz | tar -xf - || { echo unpack failed; exit 1; }
el "prebuilt $(cut -c1-12 $B/PREBUILT_COMMIT) source $(cut -c1-12 .source-commit)"
timeout 200 $B/kernels/tests/test_gpu_forward -w NoTests "forward: fwd.block_row's FP8 outputs*" > $L/lean_shard.log 2>&1 &
timeout 60 $B/bench/rmsnorm-bench --variant 'fwd.block_row,fwd.large_d_pair' --op forward_quant,add_forward_quant --dtype bf16 --rows 1024,2048 --dims 9216,12288,16384 --csv $L/h1.csv > $L/h1.txt 2>&1
el "hint bench rc=$?"
BA="--variant fwd.block_row --op forward_quant,add_forward_quant --dtype bf16 --rows 512,4096,8192,32768 --dims 2048,4096,5120,6144,8192"
for k in 1 2; do
  timeout 60 $B/bench/rmsnorm-bench $BA --csv $L/held$k.csv > $L/held$k.txt 2>&1; el "held $k rc=$?"
  RMSNORM_PROBE_LEAN_MIN_DIM=1 timeout 60 $B/bench/rmsnorm-bench $BA --csv $L/lean$k.csv > $L/lean$k.txt 2>&1; el "lean $k rc=$?"
done
RMSNORM_PROBE_LEAN_MIN_DIM=1 timeout 60 $B/bench/rmsnorm-bench --variant fwd.block_row --op add_forward_quant --dtype f16 --rows 4096,32768 --dims 4096,8192 --csv $L/leanf16.csv > $L/leanf16.txt 2>&1
timeout 60 $B/bench/rmsnorm-bench --variant fwd.block_row --op add_forward_quant --dtype f16 --rows 4096,32768 --dims 4096,8192 --csv $L/heldf16.csv > $L/heldf16.txt 2>&1
el "f16 rc=$?"
RMSNORM_PROBE_LEAN_MIN_DIM=1 timeout 200 $B/cli/rmsnorm-cert replay corpora --variant 'fwd.block_row' > $L/corpus_lean.log 2>&1
el "corpus (lean everywhere) rc=$? $(grep -E 'case files' $L/corpus_lean.log | tail -1)"
wait
el "lean shard: $(tail -2 $L/lean_shard.log | tr '\n' ' ')"
python3 - $L > $OUT/ab_table.txt <<'PY'
import csv, sys, glob, collections
L = sys.argv[1]; r = collections.defaultdict(list)
for f in sorted(glob.glob(L + '/*.csv')):
    tag = f.split('/')[-1].rstrip('.csv').rstrip('0123456789').replace('f16', '')
    for x in csv.DictReader(open(f)):
        v = x['variant'][4:] + ('' if tag == 'h' else '/' + tag)
        r[(x['op'], x['dtype'], int(x['rows']), int(x['dim']))].append((v, float(x['ratio'])))
for k in sorted(r):
    d = collections.defaultdict(list)
    for v, y in r[k]: d[v].append(y)
    print('%-18s %-5s %6d %6d  ' % k + '  '.join('%s %s' % (v, '/'.join('%.3f' % y for y in d[v])) for v in sorted(d)))
PY
cd $OUT && tar -czf logs.tgz logs && rm -rf logs; cd - >/dev/null
el done
cat $OUT/ab_table.txt
