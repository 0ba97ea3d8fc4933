#!/usr/bin/env bash
# Session 18 call 2: where the backward's dg time goes — ncu kernel durations with and without dg.
set -u
OUT=${OUT:-/tmp/out}; B=build/gpu; t0=$(date +%s)
el() { echo "[$(( $(date +%s) - t0 ))s] $*"; }
[ -x $B/bench/rmsnorm-bench ] || xz -dc .probe/prebuilt.tar.xz | tar -xf -
el "prebuilt $(cut -c1-12 $B/PREBUILT_COMMIT)"
for shape in 4096x16384 8192x4096 4096x8192 8192x8192 32768x8192; do
  R=${shape%x*}; D=${shape#*x}
  for mode in dg nodg; do
    extra=""; [ $mode = nodg ] && extra="--no-dg"
    timeout 100 ncu --clock-control none --cache-control none -k 'regex:backward|dg_column' --launch-skip 6 --launch-count 4 \
      --metrics gpu__time_duration.sum,dram__bytes_read.sum,dram__bytes_write.sum,lts__t_sectors_op_write.sum,lts__t_sectors_op_read.sum \
      $B/bench/rmsnorm-bench --op backward --dtype bf16 --rows $R --dims $D --iters 5 $extra > $OUT/ncu_${shape}_$mode.txt 2>&1
    el "$shape $mode rc=$?"
    grep -E "^  [a-z_]+.*\(|gpu__time_duration|dram__bytes|lts__t_sectors" $OUT/ncu_${shape}_$mode.txt | sed -E 's/\(rmsnorm::[^)]*\)//; s/ +/ /g' | cut -c1-120 | head -24
  done
done
cd $OUT && tar -czf logs.tgz *.txt && rm -f *.txt; cd - >/dev/null
el done
