#!/usr/bin/env bash
# Session 18 call 4: dg stage 2's tail loads first — ncu and bench A/B against call 3's build,
# certify every backward variant, corpus replay, the default bench twice.
set -u
OUT=${OUT:-/tmp/out}; B=build/gpu; t0=$(date +%s)
el() { echo "[$(( $(date +%s) - t0 ))s] $*"; }
xz -dc .probe/prebuilt.tar.xz | tar -xf - || { echo unpack failed; exit 1; }
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv > $OUT/device.txt
el "prebuilt $(cut -c1-12 $B/PREBUILT_COMMIT) source $(cut -c1-12 .source-commit)"
$B/kernels/tests/test_dispatch > $OUT/dispatch.txt 2>&1; el "dispatch rc=$? $(grep -E 'passed|failed' $OUT/dispatch.txt | tail -1)"
OLD=/tmp/old-bench; xz -dc .probe/old-bench-ed8caef.xz > $OLD; chmod +x $OLD
for shape in 8192x4096 4096x8192 8192x8192 4096x16384; do
  R=${shape%x*}; D=${shape#*x}
  for w in old new; do
    bin=$B/bench/rmsnorm-bench; [ $w = old ] && bin=$OLD
    timeout 60 ncu --clock-control none --cache-control none -k 'regex:dg_column' --launch-skip 3 --launch-count 3 --metrics gpu__time_duration.sum \
      $bin --op backward --dtype bf16 --rows $R --dims $D --iters 5 > $OUT/ncu_${shape}_$w.txt 2>&1
    el "ncu stage 2 $shape $w: $(grep gpu__time_duration $OUT/ncu_${shape}_$w.txt | awk '{print $NF}' | tr '\n' ' ')"
  done
done
for k in 1 2; do
  for w in old new; do
    bin=$B/bench/rmsnorm-bench; [ $w = old ] && bin=$OLD
    timeout 90 $bin --op backward,add_backward --dtype bf16 --rows 512,4096,8192,32768 --dims 2048,4096,5120,8192,16384,65536 \
      --csv $OUT/ab_${w}$k.csv > $OUT/ab_${w}$k.txt 2>&1
    el "bench $w $k rc=$?"
  done
done
for v in $($B/cli/rmsnorm-cert list variants --pattern 'bwd.*' 2>/dev/null | awk '/^bwd\./{print $1}'); do
  (timeout 240 $B/cli/rmsnorm-cert certify $v --cases 12 --jobs 2 --out $OUT/cert_$v > $OUT/certify_$v.log 2>&1; echo "rc=$?" > $OUT/certify_$v.rc) &
done
(timeout 240 $B/cli/rmsnorm-cert replay corpora --variant 'bwd.*' > $OUT/replay.log 2>&1; echo "rc=$?" > $OUT/replay.rc) &
wait
for f in $OUT/certify_*.log; do v=$(basename $f .log); el "$v $(cat $OUT/$v.rc) $(grep -E 'PASS|FAIL' $f | tail -1 | cut -c1-150)"; done
el "replay $(cat $OUT/replay.rc) $(grep -E '^replay:' $OUT/replay.log)"; grep -E "^fail" $OUT/replay.log | head
for k in 1 2; do
  timeout 60 $B/bench/rmsnorm-bench --csv $OUT/bench$k.csv > $OUT/bench$k.txt 2>&1; el "default bench $k rc=$?"
  python3 scripts/bench_table.py $OUT/bench$k.csv > $OUT/bench_table$k.txt 2>&1
done
python3 scripts/bench_compare.py $OUT/ab_old1.csv $OUT/ab_new1.csv --pair $OUT/ab_old2.csv $OUT/ab_new2.csv > $OUT/ab_compare.txt 2>&1
cd $OUT && tar -czf logs.tgz *.log *.txt *.rc *.csv cert_* 2>/dev/null && mkdir -p keep && cp ab_compare.txt bench1.csv bench2.csv bench_table1.txt bench_table2.txt keep/ && find . -maxdepth 1 -type f ! -name logs.tgz -delete; rm -rf cert_*; mv keep/* . && rmdir keep; cd - >/dev/null
el done
cat $OUT/bench_table1.txt; cat $OUT/bench_table2.txt | head -8
head -40 $OUT/ab_compare.txt
