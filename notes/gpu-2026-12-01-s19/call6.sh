#!/usr/bin/env bash
# Session 19 call 6: the shapes where the default bench moved 3-11 % between --alloc fresh (call 2)
# and --alloc cache (call 5), each alone in a fresh process (no buffer freed or cached before it),
# twice: which allocation mode measures a shape as it runs alone?
set -u
OUT=${OUT:-/tmp/out}; B=build/gpu; t0=$(date +%s)
el() { echo "[$(( $(date +%s) - t0 ))s] $*"; }
xz -dc .probe/prebuilt.tar.xz | tar -xf - || { echo unpack failed; exit 1; }
el "prebuilt $(cut -c1-12 $B/PREBUILT_COMMIT) source $(cut -c1-12 .source-commit)"
one() { timeout 60 $B/bench/rmsnorm-bench --op $1 --dtype $2 --rows $3 --dims $4 --csv $OUT/o.csv > /dev/null 2>&1; echo "$1 $2 $3 $4: $(tail -n +2 $OUT/o.csv | cut -d, -f6,8,10,12,14,15 | tr '\n' ' ')"; }
{
for k in 1 2; do
  one backward bf16 8192 128; one add_backward f16 8192 8192; one add_backward bf16 8192 128; one backward bf16 8192 16384
  one add_forward_quant bf16 4096 5120; one add_forward_quant bf16 8192 16384; one add_forward_quant f16 8192 4096
  one add_forward_quant f16 8192 8192; one forward_quant f16 8192 4096; one forward_quant f16 8192 8192
  one forward bf16 16 5120; one add_forward bf16 16 4096; one forward bf16 16 4096; one add_forward bf16 16 2048
  one backward bf16 32768 128; one forward bf16 512 128
done
} > $OUT/alone.txt 2>&1
rm -f $OUT/o.csv
el done
cat $OUT/alone.txt
