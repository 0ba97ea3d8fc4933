#!/usr/bin/env bash
# Session 19 call 5: call 4 again after the cache took a block only up to twice the request (call 4: small buffers in large blocks moved small-R shapes 4-10 %). rmsnorm-bench --alloc cache (buffers kept between shapes and reused, now the
# default) against --alloc fresh (a cudaMalloc / cudaFree per buffer, as before): the order probe
# of calls 2-3, then the default bench twice with the cache, to compare with call 2's (fresh).
set -u
OUT=${OUT:-/tmp/out}; B=build/gpu; t0=$(date +%s)
el() { echo "[$(( $(date +%s) - t0 ))s] $*"; }
xz -dc .probe/prebuilt.tar.xz | tar -xf - || { echo unpack failed; exit 1; }
el "prebuilt $(cut -c1-12 $B/PREBUILT_COMMIT) source $(cut -c1-12 .source-commit)"
ob() { timeout 60 $B/bench/rmsnorm-bench --op $1 --dtype bf16 --rows $2 --dims $3 --alloc $4 --csv $OUT/o.csv > /dev/null 2>&1; echo "$1 R=$2 dims $3 alloc $4: $(tail -n +2 $OUT/o.csv | cut -d, -f5,6,8,10,12 | tr '\n' ' ')"; }
{
for k in 1 2; do
  for a in fresh cache; do
    ob backward 32768 4096 $a; ob backward 32768 65536,4096,4096 $a; ob forward 32768 65536,4096,4096 $a
    ob backward 4096,8192 65536,8192 $a
  done
done
} > $OUT/alloc2x.txt 2>&1
el "probe done"
for k in 1 2; do
  timeout 90 $B/bench/rmsnorm-bench --csv $OUT/bench_cache2x$k.csv > /dev/null 2>&1; el "default bench (cache) $k rc=$?"
  python3 scripts/bench_table.py $OUT/bench_cache2x$k.csv > $OUT/bench_cache2x_table$k.txt 2>&1
done
rm -f $OUT/o.csv
el done
cat $OUT/alloc2x.txt $OUT/bench_cache2x_table1.txt $OUT/bench_cache2x_table2.txt
