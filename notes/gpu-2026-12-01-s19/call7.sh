#!/usr/bin/env bash
# Session 19 call 7: (a) the tail of a grid of whole rows: the same D at R = 4096 / 8192 and at
# row counts that fill the last wave (multiples of 132 SMs x blocks per SM), each shape in its own
# process; (b) the empty kernel's drift (0.57 us as a process's first shape, 0.75 after: calls 2-6)
# with the same shape three times in one process; (c) the default bench and the peers beside it.
set -u
OUT=${OUT:-/tmp/out}; B=build/gpu; t0=$(date +%s)
el() { echo "[$(( $(date +%s) - t0 ))s] $*"; }
xz -dc .probe/prebuilt.tar.xz | tar -xf - || { echo unpack failed; exit 1; }
el "prebuilt $(cut -c1-12 $B/PREBUILT_COMMIT) source $(cut -c1-12 .source-commit)"
one() { timeout 60 $B/bench/rmsnorm-bench --op $1 --dtype bf16 --rows $2 --dims $3 --csv $OUT/o.csv > /dev/null 2>&1; echo "$1 $2 x $3: $(tail -n +2 $OUT/o.csv | cut -d, -f6,8,10,12,14,15 | tr '\n' ' ')"; }
{
for k in 1 2; do
  for R in 3960 4096 4224 4356; do one forward $R 8192; done
  for R in 4096 4224; do one forward $R 16384; one add_forward_quant $R 8192; done
  for R in 7920 8192 8448; do one forward $R 4096; one backward $R 8192; one backward $R 4096; done
  for R in 4096 4224; do one backward $R 8192; done
done
} > $OUT/tail.txt 2>&1
el "tail probe"
{ one forward 1 128,128,128; one forward 16 5120,5120,5120; one backward 16 4096,4096; } > $OUT/empty_drift.txt 2>&1
el "empty drift"
timeout 90 $B/bench/rmsnorm-bench --csv $OUT/bench.csv > /dev/null 2>&1; el "default bench rc=$?"
python3 scripts/bench_table.py $OUT/bench.csv > $OUT/bench_table.txt 2>&1
timeout 330 python3 bench/peers.py --quick --csv $OUT/peers.csv > $OUT/peers.log 2>&1; el "peers rc=$?"
python3 scripts/bench_table.py $OUT/bench.csv $OUT/peers.csv > $OUT/peers_table.txt 2>&1
rm -f $OUT/o.csv; cd $OUT && tar -czf logs.tgz peers.log && rm -f peers.log; cd - >/dev/null
el done
cat $OUT/tail.txt $OUT/empty_drift.txt $OUT/bench_table.txt; tail -45 $OUT/peers_table.txt
