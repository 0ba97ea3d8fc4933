#!/usr/bin/env bash
# Session 23 call 2: the packed tiles' warp-wide column chunks (a thread's elements 32 apart,
# immediate offsets) in fwd.packed_rows (fb87076) and bwd.packed_rows (6b500a3: the prebuilt
# archive, "new"), and wip/packed-full-warps (14f6f37, .probe/bench_full.xz: warps inside the row
# without per-element predicates, forward only). A/B by name against main (.probe/bench_main.xz),
# two alternating rounds, alone on the GPU: every forward op (FP8 per token, then per block) and
# both backward ops, bf16 and fp32,
# D = 513-8191, R = 4096 and 32768. Then the packed variants' GPU test cases, [big], certify of
# both, the corpus replay, test_launch_configs, test_dispatch, memcheck at tails (every op and
# FP8 mode), racecheck, ncu of the fused add at 32768 x 1025 (instructions), the default bench.
set -u
OUT=${OUT:-/tmp/out}; B=build/gpu; t0=$(date +%s)
el() { echo "[$(( $(date +%s) - t0 ))s] $*"; }
xz -dc .probe/prebuilt.tar.xz | tar -xf - || { echo unpack failed; exit 1; }
for v in main full; do xz -dc .probe/bench_$v.xz > /tmp/bench_$v && chmod +x /tmp/bench_$v; done
cp $B/bench/rmsnorm-bench /tmp/bench_new
el "build $(cut -c1-12 $B/PREBUILT_COMMIT) source $(cut -c1-12 .source-commit)"
mkdir -p $OUT/ab
SH="--dtype bf16,f32 --rows 4096,32768 --dims 513,1025,2049,4097,8191"
for k in 1 2; do
  for v in main new full; do
    timeout 100 /tmp/bench_$v --variant fwd.packed_rows --op forward,add_forward,forward_quant,add_forward_quant $SH --csv $OUT/ab/fwd_${v}$k.csv > /dev/null 2>&1 || el "fwd $v $k rc=$?"
    timeout 100 /tmp/bench_$v --variant fwd.packed_rows --quant block --op forward_quant,add_forward_quant $SH --csv $OUT/ab/blk_${v}$k.csv > /dev/null 2>&1 || el "blk $v $k rc=$?"
  done
  for v in main new; do
    timeout 100 /tmp/bench_$v --variant 'bwd.packed_rows*' --op backward,add_backward $SH --csv $OUT/ab/bwd_${v}$k.csv > /dev/null 2>&1 || el "bwd $v $k rc=$?"
  done
  el "A/B pair $k done"
done
# The plain forward by name against the dispatched fwd.shifted_row and fwd.realigned_row (fwd.packed_rows
# is not dispatched for it: 0.79-0.98x in session 10's form).
for v in new full; do
  timeout 100 /tmp/bench_$v --variant fwd.packed_rows,fwd.shifted_row,fwd.realigned_row --op forward $SH --csv $OUT/byname_fwd_$v.csv > /dev/null 2>&1; el "by name $v rc=$?"
done
python3 scripts/bench_variants.py $OUT/byname_fwd_full.csv > $OUT/byname_fwd_full.txt 2>&1; head -70 $OUT/byname_fwd_full.txt
{ for g in fwd blk bwd; do
    echo "== $g: new / main"
    python3 scripts/bench_compare.py $OUT/ab/${g}_main1.csv $OUT/ab/${g}_new1.csv --pair $OUT/ab/${g}_main2.csv $OUT/ab/${g}_new2.csv --summary
  done
  for g in fwd blk; do
    echo "== $g: full / new"
    python3 scripts/bench_compare.py $OUT/ab/${g}_new1.csv $OUT/ab/${g}_full1.csv --pair $OUT/ab/${g}_new2.csv $OUT/ab/${g}_full2.csv --summary
  done; } | tee $OUT/ab_summary.txt
TF=$B/kernels/tests/test_gpu_forward; TB=$B/kernels/tests/test_gpu_backward
(timeout 500 $TF -w NoTests 'forward: fwd.packed_rows\, FP8*' > $OUT/t_fp8.log 2>&1; echo "rc=$?" > $OUT/t_fp8.rc) &
(timeout 500 $TF -w NoTests 'forward: fwd.packed_rows\, odd widths*' > $OUT/t_odd.log 2>&1; echo "rc=$?" > $OUT/t_odd.rc) &
(RMSNORM_VARIANTS=fwd.packed_rows timeout 500 $TF -w NoTests "forward: FP8 quantization*,forward: seed widths*,forward: layouts*,forward: special rows*,forward: fused add,forward: conventions*,forward: R = 0*" > $OUT/t_generic.log 2>&1; echo "rc=$?" > $OUT/t_generic.rc) &
(RMSNORM_VARIANTS='fwd.packed_rows,bwd.packed_rows*' timeout 500 bash -c "$TF -w NoTests '[big]' && $TB -w NoTests '[big]'" > $OUT/t_big.log 2>&1; echo "rc=$?" > $OUT/t_big.rc) &
(RMSNORM_VARIANTS='bwd.packed_rows*' timeout 500 $TB -w NoTests '~[big]' > $OUT/t_bwd.log 2>&1; echo "rc=$?" > $OUT/t_bwd.rc) &
(timeout 500 bash -c "$B/cli/rmsnorm-cert certify fwd.packed_rows --cases 24 --jobs 2 --out $OUT/cert && $B/cli/rmsnorm-cert certify 'bwd.packed_rows*' --cases 12 --jobs 2 --out $OUT/cert" > $OUT/certify.log 2>&1; echo "rc=$?" > $OUT/certify.rc) &
(timeout 500 $B/cli/rmsnorm-cert replay corpora --variant 'fwd.packed_rows,bwd.packed_rows*' --quiet > $OUT/replay.log 2>&1; echo "rc=$?" > $OUT/replay.rc) &
$B/kernels/tests/test_dispatch > $OUT/dispatch.log 2>&1; el "test_dispatch rc=$? $(tail -2 $OUT/dispatch.log | tr '\n' ' ')"
$B/kernels/tests/test_launch_configs > $OUT/configs.log 2>&1; el "test_launch_configs rc=$? $(tail -1 $OUT/configs.log)"
S="--dtype bf16,f32 --rows 4100 --dims 33,1025,8191 --iters 5"
for q in token static block; do
  timeout 100 compute-sanitizer --tool memcheck --error-exitcode 9 $B/bench/rmsnorm-bench --variant fwd.packed_rows --quant $q --op forward,add_forward,forward_quant,add_forward_quant $S > $OUT/san_mem_fwd_$q.log 2>&1
  el "memcheck fwd $q rc=$? $(grep -E 'ERROR SUMMARY' $OUT/san_mem_fwd_$q.log | tail -1)"
done
timeout 100 compute-sanitizer --tool memcheck --error-exitcode 9 $B/bench/rmsnorm-bench --variant 'bwd.packed_rows*' --op backward,add_backward $S > $OUT/san_mem_bwd.log 2>&1
el "memcheck bwd rc=$? $(grep -E 'ERROR SUMMARY' $OUT/san_mem_bwd.log | tail -1)"
R="--dtype bf16 --rows 1001 --dims 33,1025 --iters 5"
timeout 150 compute-sanitizer --tool racecheck --error-exitcode 9 $B/bench/rmsnorm-bench --variant fwd.packed_rows --quant block --op add_forward,add_forward_quant $R > $OUT/san_race_fwd.log 2>&1
el "racecheck fwd rc=$? $(grep -E 'RACECHECK SUMMARY' $OUT/san_race_fwd.log | tail -1)"
timeout 150 compute-sanitizer --tool racecheck --error-exitcode 9 $B/bench/rmsnorm-bench --variant 'bwd.packed_rows*' --op backward,add_backward $R > $OUT/san_race_bwd.log 2>&1
el "racecheck bwd rc=$? $(grep -E 'RACECHECK SUMMARY' $OUT/san_race_bwd.log | tail -1)"
for op in add_forward add_forward_quant; do
  timeout 100 ncu --clock-control none --launch-skip 5 --launch-count 1 -k 'regex:fwd_packed' --section InstructionStats --section SchedulerStats --section SpeedOfLight \
    /tmp/bench_new --variant fwd.packed_rows --op $op --dtype bf16 --rows 32768 --dims 1025 --iters 20 > $OUT/ncu_$op.log 2>&1
  el "ncu $op rc=$? $(grep -E '^ +(Executed Instructions |Duration|Issue Slots Busy)' $OUT/ncu_$op.log | awk '{$1=$1};1' | tr '\n' ';')"
  timeout 100 ncu --clock-control none --launch-skip 5 --launch-count 1 -k 'regex:fwd_packed' --section InstructionStats --section SchedulerStats --section SpeedOfLight \
    /tmp/bench_full --variant fwd.packed_rows --op $op --dtype bf16 --rows 32768 --dims 1025 --iters 20 > $OUT/ncu_full_$op.log 2>&1
  el "ncu full $op rc=$? $(grep -E '^ +(Executed Instructions |Duration|Issue Slots Busy)' $OUT/ncu_full_$op.log | awk '{$1=$1};1' | tr '\n' ';')"
done
wait
for p in t_fp8 t_odd t_generic t_big t_bwd certify replay; do el "$p $(cat $OUT/$p.rc) $(grep -E 'passed|failed|PASS|FAIL|^replay:' $OUT/$p.log | tail -4 | tr '\n' ' ' | cut -c1-400)"; grep -B3 -A12 FAILED $OUT/$p.log | head -30; done
timeout 100 $B/bench/rmsnorm-bench --csv $OUT/bench1.csv > /dev/null 2>&1; el "default bench rc=$?"
python3 scripts/bench_table.py $OUT/bench1.csv > $OUT/bench_table1.txt 2>&1; head -8 $OUT/bench_table1.txt
cd $OUT && tar -czf ab.tgz ab && rm -rf ab && tar -czf logs.tgz *.log *.rc *.txt cert 2>/dev/null && rm -rf *.log *.rc cert; ls
el done
