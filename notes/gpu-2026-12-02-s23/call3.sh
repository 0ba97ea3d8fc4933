#!/usr/bin/env bash
# Session 23 call 3: fwd.packed_rows' full warps (wip/packed-full-warps, .probe/bench_full.xz) and
# two blocks an SM at D <= 2560 on top of them (wip/packed-two-per-sm: the prebuilt archive,
# "two"; its kernels are SASS-identical to full's, the launch differs). A/B by name against main
# (.probe/bench_main.xz, the warp-wide chunks), two alternating rounds, alone on the GPU: every
# forward op (FP8 per token, then per block), bf16 and fp32, D = 513-2560 and 4097 (one block an
# SM in both: the control), R = 1024, 4096, 32768. Then for "two": the packed GPU test cases,
# certify, the corpus replay, test_launch_configs, test_dispatch, memcheck and racecheck at tails,
# the plain forward by name against fwd.shifted_row / fwd.realigned_row, ncu, the default bench.
set -u
OUT=${OUT:-/tmp/out}; B=build/gpu; t0=$(date +%s)
el() { echo "[$(( $(date +%s) - t0 ))s] $*"; }
xz -dc .probe/prebuilt.tar.xz | tar -xf - || { echo unpack failed; exit 1; }
for v in main full; do xz -dc .probe/bench_$v.xz > /tmp/bench_$v && chmod +x /tmp/bench_$v; done
cp $B/bench/rmsnorm-bench /tmp/bench_two
el "build $(cut -c1-12 $B/PREBUILT_COMMIT) source $(cut -c1-12 .source-commit)"
mkdir -p $OUT/ab
SH="--dtype bf16,f32 --rows 1024,4096,32768 --dims 513,1025,1537,2049,2560,4097"
for k in 1 2; do
  for v in main full two; do
    timeout 100 /tmp/bench_$v --variant fwd.packed_rows --op forward,add_forward,forward_quant,add_forward_quant $SH --csv $OUT/ab/fwd_${v}$k.csv > /dev/null 2>&1 || el "fwd $v $k rc=$?"
    timeout 100 /tmp/bench_$v --variant fwd.packed_rows --quant block --op forward_quant,add_forward_quant $SH --csv $OUT/ab/blk_${v}$k.csv > /dev/null 2>&1 || el "blk $v $k rc=$?"
  done
  el "A/B round $k done"
done
{ for g in fwd blk; do
    echo "== $g: full / main"
    python3 scripts/bench_compare.py $OUT/ab/${g}_main1.csv $OUT/ab/${g}_full1.csv --pair $OUT/ab/${g}_main2.csv $OUT/ab/${g}_full2.csv --summary
    echo "== $g: two / full"
    python3 scripts/bench_compare.py $OUT/ab/${g}_full1.csv $OUT/ab/${g}_two1.csv --pair $OUT/ab/${g}_full2.csv $OUT/ab/${g}_two2.csv --summary
  done
  echo "== fwd: two / full, shapes past 3 % in both rounds"
  python3 scripts/bench_compare.py $OUT/ab/fwd_full1.csv $OUT/ab/fwd_two1.csv --pair $OUT/ab/fwd_full2.csv $OUT/ab/fwd_two2.csv | tail -40; } | tee $OUT/ab_summary.txt
timeout 100 /tmp/bench_two --variant fwd.packed_rows,fwd.shifted_row,fwd.realigned_row --op forward $SH --csv $OUT/byname_fwd.csv > /dev/null 2>&1; el "by name rc=$?"
python3 scripts/bench_variants.py $OUT/byname_fwd.csv > $OUT/byname_fwd.txt 2>&1
TF=$B/kernels/tests/test_gpu_forward
(timeout 480 $TF -w NoTests 'forward: fwd.packed_rows\, FP8*' > $OUT/t_fp8.log 2>&1; echo "rc=$?" > $OUT/t_fp8.rc) &
(timeout 480 $TF -w NoTests 'forward: fwd.packed_rows\, odd widths*' > $OUT/t_odd.log 2>&1; echo "rc=$?" > $OUT/t_odd.rc) &
(RMSNORM_VARIANTS=fwd.packed_rows timeout 480 $TF -w NoTests "forward: FP8 quantization*,forward: seed widths*,forward: layouts*,forward: special rows*,forward: fused add,forward: conventions*,forward: R = 0*,[big]" > $OUT/t_generic.log 2>&1; echo "rc=$?" > $OUT/t_generic.rc) &
(timeout 480 $B/cli/rmsnorm-cert certify fwd.packed_rows --cases 24 --jobs 2 --out $OUT/cert > $OUT/certify.log 2>&1; echo "rc=$?" > $OUT/certify.rc) &
(timeout 480 $B/cli/rmsnorm-cert replay corpora --variant 'fwd.packed_rows' --quiet > $OUT/replay.log 2>&1; echo "rc=$?" > $OUT/replay.rc) &
$B/kernels/tests/test_dispatch > $OUT/dispatch.log 2>&1; el "test_dispatch rc=$? $(tail -2 $OUT/dispatch.log | tr '\n' ' ')"
$B/kernels/tests/test_launch_configs > $OUT/configs.log 2>&1; el "test_launch_configs rc=$? $(tail -1 $OUT/configs.log)"
S="--dtype bf16,f32 --rows 4100 --dims 33,1025,2560,8191 --iters 5"
for q in token static block; do
  timeout 100 compute-sanitizer --tool memcheck --error-exitcode 9 $B/bench/rmsnorm-bench --variant fwd.packed_rows --quant $q --op forward,add_forward,forward_quant,add_forward_quant $S > $OUT/san_mem_fwd_$q.log 2>&1
  el "memcheck fwd $q rc=$? $(grep -E 'ERROR SUMMARY' $OUT/san_mem_fwd_$q.log | tail -1)"
done
R="--dtype bf16 --rows 1001 --dims 33,1025 --iters 5"
timeout 150 compute-sanitizer --tool racecheck --error-exitcode 9 $B/bench/rmsnorm-bench --variant fwd.packed_rows --quant block --op add_forward,add_forward_quant,forward $R > $OUT/san_race_fwd.log 2>&1
el "racecheck fwd rc=$? $(grep -E 'RACECHECK SUMMARY' $OUT/san_race_fwd.log | tail -1)"
for v in full two; do
  timeout 100 ncu --clock-control none --launch-skip 5 --launch-count 1 -k 'regex:fwd_packed' --section InstructionStats --section SchedulerStats --section SpeedOfLight --section Occupancy --section LaunchStats \
    /tmp/bench_$v --variant fwd.packed_rows --op add_forward --dtype bf16 --rows 32768 --dims 1025 --iters 20 > $OUT/ncu_$v.log 2>&1
  el "ncu $v rc=$? $(grep -E '^ +(Executed Instructions |Duration|Achieved Occupancy|Grid Size|Block Size|Issue Slots Busy)' $OUT/ncu_$v.log | awk '{$1=$1};1' | tr '\n' ';')"
done
wait
for p in t_fp8 t_odd t_generic certify replay; do el "$p $(cat $OUT/$p.rc) $(grep -E 'passed|failed|PASS|FAIL|^replay:' $OUT/$p.log | tail -4 | tr '\n' ' ' | cut -c1-400)"; grep -B3 -A12 FAILED $OUT/$p.log | head -30; done
timeout 100 $B/bench/rmsnorm-bench --csv $OUT/bench1.csv > /dev/null 2>&1; el "default bench rc=$?"
python3 scripts/bench_table.py $OUT/bench1.csv > $OUT/bench_table1.txt 2>&1; head -8 $OUT/bench_table1.txt
head -80 $OUT/byname_fwd.txt
cd $OUT && tar -czf ab.tgz ab && rm -rf ab && tar -czf logs.tgz *.log *.rc cert 2>/dev/null && rm -rf *.log *.rc cert; ls
el done
