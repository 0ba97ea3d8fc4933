#!/usr/bin/env bash
# Session 19 call 3: the bench's order effect. Call 2: after 32768 x 65536 in the same process,
# 32768 x 4096 ran 10-24 % slower in both of its next measurements (backward 247 us against 199
# alone, forward 146 against 133), the copy beside it only the first time. Is it the SMs' shared
# memory / L1 split that the D = 65536 kernels (up to 227 KB of shared memory a block) leave
# behind? rmsnorm-bench --prelude launches one kernel on every SM before each variant's warm-up:
# max-smem (as a GEMM would), max-l1, or none.
set -u
OUT=${OUT:-/tmp/out}; B=build/gpu; t0=$(date +%s)
el() { echo "[$(( $(date +%s) - t0 ))s] $*"; }
xz -dc .probe/prebuilt.tar.xz | tar -xf - || { echo unpack failed; exit 1; }
el "prebuilt $(cut -c1-12 $B/PREBUILT_COMMIT) source $(cut -c1-12 .source-commit)"
ob() { timeout 60 $B/bench/rmsnorm-bench --op $1 --dtype bf16 --rows $2 --dims $3 --prelude $4 --csv $OUT/o.csv > /dev/null 2>&1; echo "$1 R=$2 dims $3 prelude $4: $(tail -n +2 $OUT/o.csv | cut -d, -f5,6,8,10,12 | tr '\n' ' ')"; }
{
for k in 1 2; do
  for pre in none max-smem max-l1; do
    ob backward 32768 4096 $pre; ob forward 32768 4096 $pre
    ob backward 8192 8192 $pre; ob backward 8192 4096 $pre; ob forward 4096 8192 $pre; ob forward 8192 4096 $pre
    ob add_forward_quant 4096 8192 $pre; ob backward 4096 16384 $pre
  done
  ob backward 32768 65536,4096 max-l1; ob forward 32768 65536,4096 max-l1
  ob backward 32768 65536,4096 none; ob forward 32768 65536,4096 none
done
} > $OUT/prelude.txt 2>&1
el done
cat $OUT/prelude.txt
