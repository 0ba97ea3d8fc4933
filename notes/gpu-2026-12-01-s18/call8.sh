#!/usr/bin/env bash
# Session 18 call 8: where the backward hints cross over now (R = 64-2048), by name, bf16, two runs.
set -u
OUT=${OUT:-/tmp/out}; B=build/gpu; t0=$(date +%s)
el() { echo "[$(( $(date +%s) - t0 ))s] $*"; }
[ -x $B/bench/rmsnorm-bench ] || xz -dc .probe/prebuilt.tar.xz | tar -xf -
el "prebuilt $(cut -c1-12 $B/PREBUILT_COMMIT)"
for k in 1 2; do
  timeout 200 $B/bench/rmsnorm-bench --variant 'bwd.staged_rows.vec8,bwd.staged_streams.vec8,bwd.staged_cluster.vec8' --op backward,add_backward \
    --dtype bf16 --rows 64,128,256,512,1024,2048 --dims 2048,4096,5120,8192,12288,16384 --csv $OUT/byname$k.csv > $OUT/byname$k.txt 2>&1
  el "by name $k rc=$?"
  python3 scripts/bench_variants.py $OUT/byname$k.csv > $OUT/byname${k}_table.txt 2>&1
done
timeout 100 $B/bench/rmsnorm-bench --variant 'bwd.staged_rows.vec8,bwd.staged_streams.vec8' --op backward,add_backward \
    --dtype f16 --rows 512,1024,2048 --dims 2048,4096,5120 --csv $OUT/byname_f16.csv > $OUT/byname_f16.txt 2>&1
python3 scripts/bench_variants.py $OUT/byname_f16.csv > $OUT/byname_f16_table.txt 2>&1
cd $OUT && tar -czf logs.tgz *.txt *.csv && find . -maxdepth 1 -type f ! -name logs.tgz ! -name 'byname*_table.txt' -delete; cd - >/dev/null
el done
paste -d'|' <(cut -c1-125 $OUT/byname1_table.txt) <(cut -c30-60 $OUT/byname2_table.txt) | head -80
cat $OUT/byname_f16_table.txt
