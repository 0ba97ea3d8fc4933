#!/usr/bin/env bash
# Session 18 call 5: the final build (kernels SASS-identical to call 3's) — the default bench twice,
# the backward with and without dg, the peers beside them.
set -u
OUT=${OUT:-/tmp/out}; B=build/gpu; t0=$(date +%s)
el() { echo "[$(( $(date +%s) - t0 ))s] $*"; }
xz -dc .probe/prebuilt.tar.xz | tar -xf - || { echo unpack failed; exit 1; }
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv > $OUT/device.txt
el "prebuilt $(cut -c1-12 $B/PREBUILT_COMMIT) source $(cut -c1-12 .source-commit)"
for k in 1 2; do
  timeout 60 $B/bench/rmsnorm-bench --csv $OUT/bench$k.csv > $OUT/bench$k.txt 2>&1; el "default bench $k rc=$?"
  python3 scripts/bench_table.py $OUT/bench$k.csv > $OUT/bench_table$k.txt 2>&1
done
for k in 1 2; do
  timeout 60 $B/bench/rmsnorm-bench --op backward,add_backward --dtype bf16 --rows 4096,8192,32768 --dims 4096,8192,16384,65536 --csv $OUT/bwd_dg$k.csv > $OUT/bwd_dg$k.txt 2>&1
  timeout 60 $B/bench/rmsnorm-bench --op backward,add_backward --dtype bf16 --rows 4096,8192,32768 --dims 4096,8192,16384,65536 --no-dg --csv $OUT/bwd_nodg$k.csv > $OUT/bwd_nodg$k.txt 2>&1
  el "dg probe $k"
done
timeout 300 python3 bench/peers.py --quick --csv $OUT/peers.csv > $OUT/peers.log 2>&1; el "peers rc=$?"
python3 scripts/bench_table.py $OUT/bench1.csv $OUT/peers.csv > $OUT/peers_table.txt 2>&1
cd $OUT && tar -czf logs.tgz *.log *.txt *.csv 2>/dev/null && mkdir -p keep && cp bench1.csv bench2.csv bench_table1.txt bench_table2.txt peers_table.txt peers.csv keep/ && find . -maxdepth 1 -type f ! -name logs.tgz -delete; mv keep/* . && rmdir keep; cd - >/dev/null
el done
cat $OUT/bench_table1.txt; head -8 $OUT/bench_table2.txt
tail -45 $OUT/peers_table.txt
