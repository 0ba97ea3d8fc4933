#!/usr/bin/env bash
# Session 18 call 7: with the dg partial through shared memory (call 3), do the dispatch hints of the
# backward still hold? By name, bf16, two runs: bwd.staged_rows (whose scattered partial write was
# the costliest), bwd.staged_streams, bwd.staged_cluster.
set -u
OUT=${OUT:-/tmp/out}; B=build/gpu; t0=$(date +%s)
el() { echo "[$(( $(date +%s) - t0 ))s] $*"; }
xz -dc .probe/prebuilt.tar.xz | tar -xf - || { echo unpack failed; exit 1; }
el "prebuilt $(cut -c1-12 $B/PREBUILT_COMMIT) source $(cut -c1-12 .source-commit)"
for k in 1 2; do
  timeout 200 $B/bench/rmsnorm-bench --variant 'bwd.staged_rows.vec8,bwd.staged_streams.vec8,bwd.staged_cluster.vec8' --op backward,add_backward \
    --dtype bf16 --rows 512,4096,8192,32768 --dims 2048,4096,5120,8192,16384 --csv $OUT/byname$k.csv > $OUT/byname$k.txt 2>&1
  el "by name $k rc=$?"
  python3 scripts/bench_variants.py $OUT/byname$k.csv > $OUT/byname${k}_table.txt 2>&1
done
cd $OUT && tar -czf logs.tgz *.txt *.csv && find . -maxdepth 1 -type f ! -name logs.tgz ! -name 'byname*_table.txt' -delete; cd - >/dev/null
el done
paste -d'|' <(cut -c1-120 $OUT/byname1_table.txt) <(cut -c30-120 $OUT/byname2_table.txt) | head -50
