#!/usr/bin/env bash
# Session 18 call 9: the cluster's few-rows hint at R = 1-64 now (bf16 and fp32), by name, two runs.
set -u
OUT=${OUT:-/tmp/out}; B=build/gpu; t0=$(date +%s)
el() { echo "[$(( $(date +%s) - t0 ))s] $*"; }
[ -x $B/bench/rmsnorm-bench ] || xz -dc .probe/prebuilt.tar.xz | tar -xf -
for k in 1 2; do
  timeout 100 $B/bench/rmsnorm-bench --variant 'bwd.staged_rows.vec8,bwd.staged_cluster.vec8' --op backward,add_backward \
    --dtype bf16 --rows 1,4,16,32,64 --dims 4096,8192,12288,16384 --csv $OUT/small$k.csv > $OUT/small$k.txt 2>&1
  timeout 100 $B/bench/rmsnorm-bench --variant 'bwd.staged_rows.vec8,bwd.staged_cluster.vec8' --op backward,add_backward \
    --dtype f32 --rows 1,16,64,128,512 --dims 4096,8192 --csv $OUT/small32_$k.csv > $OUT/small32_$k.txt 2>&1
  el "run $k"
  { python3 scripts/bench_variants.py $OUT/small$k.csv; python3 scripts/bench_variants.py $OUT/small32_$k.csv; } > $OUT/small${k}_table.txt 2>&1
done
cd $OUT && tar -czf logs.tgz *.txt *.csv && find . -maxdepth 1 -type f ! -name logs.tgz ! -name 'small*_table.txt' -delete; cd - >/dev/null
paste -d'|' <(cut -c1-115 $OUT/small1_table.txt) <(cut -c30-62 $OUT/small2_table.txt)
