#!/usr/bin/env bash
# Session 23 call 1: wip/packed-fp8-pairs (fwd.packed_rows' FP8 codes converted in pairs; then the
# format a compile-time constant) against main, by name. Binaries: main (.probe/bench_main.xz),
# pairs (.probe/bench_pairs.xz, the branch's first commit) and fmt (the prebuilt archive: the
# branch's head). Two alternating triples per FP8 scale mode, alone on the GPU; then, for the
# head: the FP8 and odd-width GPU test cases, certify fwd.packed_rows, the corpus replay, memcheck
# at tails (exact-size buffers, every op and mode) and racecheck; ncu source counters of the
# fused add and the add + FP8 at 32768 x 1025 bf16 (where the instructions go).
set -u
OUT=${OUT:-/tmp/out}; B=build/gpu; t0=$(date +%s)
el() { echo "[$(( $(date +%s) - t0 ))s] $*"; }
xz -dc .probe/prebuilt.tar.xz | tar -xf - || { echo unpack failed; exit 1; }
for v in main pairs; do xz -dc .probe/bench_$v.xz > /tmp/bench_$v && chmod +x /tmp/bench_$v; done
cp $B/bench/rmsnorm-bench /tmp/bench_fmt
el "build $(cut -c1-12 $B/PREBUILT_COMMIT) source $(cut -c1-12 .source-commit)"
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu --format=csv,noheader
A="--variant fwd.packed_rows --op forward_quant,add_forward_quant --dtype bf16,f32 --rows 4096,32768 --dims 513,1025,2049,4097,8191"
mkdir -p $OUT/ab
for q in token block static; do
  for k in 1 2; do
    for v in main pairs fmt; do timeout 100 /tmp/bench_$v $A --quant $q --csv $OUT/ab/${q}_${v}$k.csv > /dev/null 2>&1 || el "$q $v $k rc=$?"; done
  done
  el "A/B $q done"
done
TF=$B/kernels/tests/test_gpu_forward
(timeout 480 $TF -w NoTests 'forward: fwd.packed_rows\, FP8*' > $OUT/t_fp8.log 2>&1; echo "rc=$?" > $OUT/t_fp8.rc) &
(timeout 480 $TF -w NoTests 'forward: fwd.packed_rows\, odd widths*' > $OUT/t_odd.log 2>&1; echo "rc=$?" > $OUT/t_odd.rc) &
(RMSNORM_VARIANTS=fwd.packed_rows timeout 480 $TF -w NoTests "forward: FP8 quantization*,forward: special rows*,forward: fused add" > $OUT/t_generic.log 2>&1; echo "rc=$?" > $OUT/t_generic.rc) &
(timeout 480 $B/cli/rmsnorm-cert certify fwd.packed_rows --cases 24 --jobs 2 --out $OUT/cert > $OUT/certify.log 2>&1; echo "rc=$?" > $OUT/certify.rc) &
(timeout 480 $B/cli/rmsnorm-cert replay corpora --variant 'fwd.packed_rows' --quiet > $OUT/replay.log 2>&1; echo "rc=$?" > $OUT/replay.rc) &
S="--dtype bf16,f32 --rows 4100 --dims 33,1025,8191 --iters 5"
for q in token static block; do
  timeout 100 compute-sanitizer --tool memcheck --error-exitcode 9 $B/bench/rmsnorm-bench --variant fwd.packed_rows --quant $q --op forward_quant,add_forward_quant $S > $OUT/san_mem_$q.log 2>&1
  el "memcheck $q rc=$? $(grep -E 'ERROR SUMMARY' $OUT/san_mem_$q.log | tail -1)"
done
timeout 150 compute-sanitizer --tool racecheck --error-exitcode 9 $B/bench/rmsnorm-bench --variant fwd.packed_rows --quant block --op add_forward_quant,forward_quant --dtype bf16 --rows 1001 --dims 33,1025 --iters 5 > $OUT/san_race.log 2>&1
el "racecheck rc=$? $(grep -E 'RACECHECK SUMMARY' $OUT/san_race.log | tail -1)"
for op in add_forward add_forward_quant; do
  timeout 120 ncu --clock-control none --launch-skip 5 --launch-count 1 -k 'regex:fwd_packed' --section SourceCounters --section WarpStateStats --section SchedulerStats --section InstructionStats \
    -o $OUT/ncu_$op /tmp/bench_fmt --variant fwd.packed_rows --op $op --dtype bf16 --rows 32768 --dims 1025 --iters 20 > $OUT/ncu_$op.log 2>&1
  el "ncu $op rc=$?"
  ncu -i $OUT/ncu_$op.ncu-rep --page source --csv --print-source sass > $OUT/ncu_${op}_sass.csv 2> $OUT/ncu_${op}_sass.err; el "source page rc=$? $(wc -l < $OUT/ncu_${op}_sass.csv) lines"
  ncu -i $OUT/ncu_$op.ncu-rep --page details > $OUT/ncu_${op}_details.txt 2>&1
  grep -E 'Executed Instructions |Duration|Issue Slots Busy|No Eligible|Eligible Warps' $OUT/ncu_${op}_details.txt | head -8
done
wait
for q in token block static; do
  for v in pairs fmt; do
    echo "== $q: $v / main"
    python3 scripts/bench_compare.py $OUT/ab/${q}_main1.csv $OUT/ab/${q}_${v}1.csv --pair $OUT/ab/${q}_main2.csv $OUT/ab/${q}_${v}2.csv --summary
  done
done | tee $OUT/ab_summary.txt
for p in t_fp8 t_odd t_generic certify replay; do el "$p $(cat $OUT/$p.rc) $(grep -E 'passed|failed|PASS|FAIL|^replay:' $OUT/$p.log | tail -3 | tr '\n' ' ' | cut -c1-400)"; grep -B3 -A12 FAILED $OUT/$p.log | head -30; done
cd $OUT && tar -czf ab.tgz ab && rm -rf ab && tar -czf ncu.tgz ncu_* && rm -rf ncu_* && tar -czf logs.tgz *.log *.rc cert 2>/dev/null && rm -rf *.log *.rc cert; ls
el done
