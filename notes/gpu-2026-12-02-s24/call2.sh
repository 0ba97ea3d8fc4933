#!/usr/bin/env bash
# Session 24 call 2: the candidate wip/packed-bwd-two-per-sm (prebuilt .probe/cand.tar.xz):
# bwd.packed_rows with two blocks an SM where a row's group fits 320 threads (D <= 2560) and one
# element form (the wide fused-add instance, D > 5120, without its branch per element). By name
# against main's build (.probe/prebuilt.tar.xz, unpacked aside), two rounds, then the packed step
# of gpu_session.sh on the candidate (its backward case alone, certify, replay, sanitizers) and
# the default bench.
set -u
OUT=${OUT:-/tmp/out}; B=build/gpu; t0=$(date +%s)
el() { echo "[$(( $(date +%s) - t0 ))s] $*"; }
mkdir -p /tmp/mainb && xz -dc .probe/prebuilt.tar.xz | tar -C /tmp/mainb -xf - || { echo unpack main failed; exit 1; }
xz -dc .probe/cand.tar.xz | tar -xf - || { echo unpack cand failed; exit 1; }
el "cand $(cut -c1-12 $B/PREBUILT_COMMIT) main $(cut -c1-12 /tmp/mainb/$B/PREBUILT_COMMIT) source $(cut -c1-12 .source-commit)"
cp $B/bench/rmsnorm-bench /tmp/bench_cand; cp /tmp/mainb/$B/bench/rmsnorm-bench /tmp/bench_main
mkdir -p $OUT/ab
for k in 1 2; do
  for v in main cand; do
    timeout 100 /tmp/bench_$v --variant 'bwd.packed_rows*' --op backward,add_backward --dtype bf16,f32 --rows 1024,4096,32768 --dims 513,1025,1537,2049,2560 --csv $OUT/ab/narrow_${v}$k.csv > /dev/null 2>&1 || el "narrow $v $k rc=$?"
    timeout 100 /tmp/bench_$v --variant 'bwd.packed_rows*' --op add_backward,backward --dtype bf16 --rows 1024,4096,32768 --dims 5121,6145,8191 --csv $OUT/ab/wide_${v}$k.csv > /dev/null 2>&1 || el "wide $v $k rc=$?"
  done
done
el "A/B done"
{ echo "== D <= 2560: cand / main"
  python3 scripts/bench_compare.py $OUT/ab/narrow_main1.csv $OUT/ab/narrow_cand1.csv --pair $OUT/ab/narrow_main2.csv $OUT/ab/narrow_cand2.csv --summary
  python3 scripts/bench_compare.py $OUT/ab/narrow_main1.csv $OUT/ab/narrow_cand1.csv --pair $OUT/ab/narrow_main2.csv $OUT/ab/narrow_cand2.csv | tail -40
  echo "== wide (D > 5120): cand / main"
  python3 scripts/bench_compare.py $OUT/ab/wide_main1.csv $OUT/ab/wide_cand1.csv --pair $OUT/ab/wide_main2.csv $OUT/ab/wide_cand2.csv --summary
  python3 scripts/bench_compare.py $OUT/ab/wide_main1.csv $OUT/ab/wide_cand1.csv --pair $OUT/ab/wide_main2.csv $OUT/ab/wide_cand2.csv | tail -20; } | tee $OUT/ab_summary.txt
mkdir -p $OUT/gs
PREBUILT=.probe/cand.tar.xz PACKED_TIMEOUT=420 OUT=$OUT/gs bash scripts/gpu_session.sh prebuilt packed > $OUT/session.log 2>&1
el "gpu_session rc=$?"; cat $OUT/gs/summary.txt
$B/kernels/tests/test_launch_configs > $OUT/configs.log 2>&1; el "test_launch_configs rc=$? $(tail -1 $OUT/configs.log)"
timeout 60 $B/bench/rmsnorm-bench --csv $OUT/bench1.csv > /dev/null 2>&1; el "default bench rc=$?"
python3 scripts/bench_table.py $OUT/bench1.csv > $OUT/bench_table1.txt 2>&1; head -8 $OUT/bench_table1.txt
cd $OUT && tar -czf call_logs.tgz ab session.log configs.log gs && rm -rf ab session.log configs.log gs; ls
el done
