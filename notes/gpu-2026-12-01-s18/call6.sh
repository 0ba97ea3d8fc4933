#!/usr/bin/env bash
# Session 18 call 6: the bench's order effect — a shape measured right after a D = 65536 shape ran
# 10-20 % slower (call 5's dg probe, call 3's A/B). Clocks, power and the same shape fresh, right
# after 32768 x 65536, and after a pause.
set -u
OUT=${OUT:-/tmp/out}; B=build/gpu; t0=$(date +%s)
el() { echo "[$(( $(date +%s) - t0 ))s] $*"; }
xz -dc .probe/prebuilt.tar.xz | tar -xf - || { echo unpack failed; exit 1; }
q() { nvidia-smi --query-gpu=clocks.sm,clocks.mem,power.draw,temperature.gpu,clocks_throttle_reasons.active --format=csv,noheader; }
bb() { $B/bench/rmsnorm-bench --op backward --dtype bf16 --rows $1 --dims $2 --csv $OUT/$3.csv > /dev/null 2>&1; tail -1 $OUT/$3.csv | cut -d, -f4,5,6,8,10,12; }
el "idle: $(q)"
el "fresh 8192x4096: $(bb 8192 4096 a1)"
el "fresh 32768x2048: $(bb 32768 2048 a2)"
el "after those: $(q)"
el "32768x65536: $(bb 32768 65536 big1)"
el "right after: $(q)"
el "8192x4096 right after: $(bb 8192 4096 b1)"
el "32768x2048 next: $(bb 32768 2048 b2)"
el "then: $(q)"
sleep 10
el "after 10 s: $(q)"
el "8192x4096 after 10 s: $(bb 8192 4096 c1)"
el "32768x2048 after 10 s: $(bb 32768 2048 c2)"
# One process, the order of call 5's probe (rows 4096, 8192, 32768 x D 4096 ... 65536): clocks sampled beside it.
( for i in $(seq 1 40); do q; sleep 0.5; done ) > $OUT/clocks.txt &
$B/bench/rmsnorm-bench --op backward --dtype bf16 --rows 4096,8192,32768 --dims 4096,8192,65536 --csv $OUT/seq.csv > /dev/null 2>&1
wait
cut -d, -f4,5,6,8,10,12 $OUT/seq.csv
sort $OUT/clocks.txt | uniq -c | sort -rn | head -8
cd $OUT && tar -czf logs.tgz *.csv *.txt && find . -maxdepth 1 -type f ! -name logs.tgz -delete; cd - >/dev/null
el done
