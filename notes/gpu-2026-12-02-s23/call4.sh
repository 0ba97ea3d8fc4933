#!/usr/bin/env bash
# Session 23 call 4: the candidate (prebuilt: warp-wide chunks, full warps, two blocks an SM only
# where they hold as many threads as one). By name, alone on the GPU first: against full
# (.probe/bench_full.xz, one block an SM) at D = 513-2560, two rounds; the plain forward and the
# FP8 forward per token against fwd.shifted_row / fwd.realigned_row / fwd.element_row at R = 512-
# 32768 (the dispatch). Then the packed GPU test cases, [big], certify, the corpus replay,
# test_launch_configs, test_dispatch, memcheck and racecheck at tails, the default bench twice.
# Beside it, bwd.packed_rows with full warps (wip/packed-bwd-full-warps, .probe/bench_bwdfull.xz)
# against the candidate's backward (the chunks of call 2), by name, two rounds: A/B only.
set -u
OUT=${OUT:-/tmp/out}; B=build/gpu; t0=$(date +%s)
el() { echo "[$(( $(date +%s) - t0 ))s] $*"; }
xz -dc .probe/prebuilt.tar.xz | tar -xf - || { echo unpack failed; exit 1; }
for v in full bwdfull; do xz -dc .probe/bench_$v.xz > /tmp/bench_$v && chmod +x /tmp/bench_$v; done
cp $B/bench/rmsnorm-bench /tmp/bench_cand
el "build $(cut -c1-12 $B/PREBUILT_COMMIT) source $(cut -c1-12 .source-commit)"
mkdir -p $OUT/ab
SH="--dtype bf16,f32 --rows 1024,4096,32768 --dims 513,1025,1537,2049,2560"
for k in 1 2; do
  for v in full cand; do
    timeout 100 /tmp/bench_$v --variant fwd.packed_rows --op forward,add_forward,forward_quant,add_forward_quant $SH --csv $OUT/ab/fwd_${v}$k.csv > /dev/null 2>&1 || el "fwd $v $k rc=$?"
  done
  for v in cand bwdfull; do
    timeout 100 /tmp/bench_$v --variant 'bwd.packed_rows*' --op backward,add_backward --dtype bf16,f32 --rows 4096,32768 --dims 513,1025,2049,4097,8191 --csv $OUT/ab/bwd_${v}$k.csv > /dev/null 2>&1 || el "bwd $v $k rc=$?"
  done
done
el "A/B done"
V=fwd.packed_rows,fwd.shifted_row,fwd.realigned_row,fwd.element_row
timeout 120 /tmp/bench_cand --variant $V --op forward --dtype bf16,f32 --rows 512,1024,2048,4096,32768 --dims 513,1025,1537,2049,2560,4097,8191 --csv $OUT/byname_fwd.csv > /dev/null 2>&1; el "by name forward rc=$?"
timeout 120 /tmp/bench_cand --variant $V --op forward_quant --quant token --dtype bf16,f32 --rows 1024,4096,32768 --dims 513,1025,2049,4097,8191 --csv $OUT/byname_fp8.csv > /dev/null 2>&1; el "by name FP8 rc=$?"
{ echo "== fwd: cand / full (D <= 2560)"
  python3 scripts/bench_compare.py $OUT/ab/fwd_full1.csv $OUT/ab/fwd_cand1.csv --pair $OUT/ab/fwd_full2.csv $OUT/ab/fwd_cand2.csv --summary
  python3 scripts/bench_compare.py $OUT/ab/fwd_full1.csv $OUT/ab/fwd_cand1.csv --pair $OUT/ab/fwd_full2.csv $OUT/ab/fwd_cand2.csv | tail -30
  echo "== bwd: bwdfull / cand"
  python3 scripts/bench_compare.py $OUT/ab/bwd_cand1.csv $OUT/ab/bwd_bwdfull1.csv --pair $OUT/ab/bwd_cand2.csv $OUT/ab/bwd_bwdfull2.csv --summary
  python3 scripts/bench_compare.py $OUT/ab/bwd_cand1.csv $OUT/ab/bwd_bwdfull1.csv --pair $OUT/ab/bwd_cand2.csv $OUT/ab/bwd_bwdfull2.csv | tail -20; } | tee $OUT/ab_summary.txt
python3 scripts/bench_variants.py $OUT/byname_fwd.csv > $OUT/byname_fwd.txt 2>&1
python3 scripts/bench_variants.py $OUT/byname_fp8.csv > $OUT/byname_fp8.txt 2>&1
TF=$B/kernels/tests/test_gpu_forward
(timeout 460 $TF -w NoTests 'forward: fwd.packed_rows\, FP8*' > $OUT/t_fp8.log 2>&1; echo "rc=$?" > $OUT/t_fp8.rc) &
(timeout 460 $TF -w NoTests 'forward: fwd.packed_rows\, odd widths*' > $OUT/t_odd.log 2>&1; echo "rc=$?" > $OUT/t_odd.rc) &
(RMSNORM_VARIANTS=fwd.packed_rows timeout 460 $TF -w NoTests "forward: FP8 quantization*,forward: seed widths*,forward: layouts*,forward: special rows*,forward: fused add,forward: conventions*,forward: R = 0*,[big]" > $OUT/t_generic.log 2>&1; echo "rc=$?" > $OUT/t_generic.rc) &
(timeout 460 $B/cli/rmsnorm-cert certify fwd.packed_rows --cases 24 --jobs 2 --out $OUT/cert > $OUT/certify.log 2>&1; echo "rc=$?" > $OUT/certify.rc) &
(timeout 460 $B/cli/rmsnorm-cert replay corpora --variant 'fwd.packed_rows,bwd.packed_rows*' --quiet > $OUT/replay.log 2>&1; echo "rc=$?" > $OUT/replay.rc) &
$B/kernels/tests/test_dispatch > $OUT/dispatch.log 2>&1; el "test_dispatch rc=$? $(tail -2 $OUT/dispatch.log | tr '\n' ' ')"
$B/kernels/tests/test_launch_configs > $OUT/configs.log 2>&1; el "test_launch_configs rc=$? $(tail -1 $OUT/configs.log)"
S="--dtype bf16,f32 --rows 4100 --dims 33,1025,2560,8191 --iters 5"
for q in token block; do
  timeout 100 compute-sanitizer --tool memcheck --error-exitcode 9 $B/bench/rmsnorm-bench --variant fwd.packed_rows --quant $q --op forward,add_forward,forward_quant,add_forward_quant $S > $OUT/san_mem_fwd_$q.log 2>&1
  el "memcheck fwd $q rc=$? $(grep -E 'ERROR SUMMARY' $OUT/san_mem_fwd_$q.log | tail -1)"
done
timeout 150 compute-sanitizer --tool racecheck --error-exitcode 9 $B/bench/rmsnorm-bench --variant fwd.packed_rows --quant block --op add_forward,add_forward_quant,forward --dtype bf16,f32 --rows 1001 --dims 33,1025 --iters 5 > $OUT/san_race_fwd.log 2>&1
el "racecheck fwd rc=$? $(grep -E 'RACECHECK SUMMARY' $OUT/san_race_fwd.log | tail -1)"
wait
for p in t_fp8 t_odd t_generic certify replay; do el "$p $(cat $OUT/$p.rc) $(grep -E 'passed|failed|PASS|FAIL|^replay:' $OUT/$p.log | tail -4 | tr '\n' ' ' | cut -c1-400)"; grep -B3 -A12 FAILED $OUT/$p.log | head -30; done
for k in 1 2; do
  timeout 100 $B/bench/rmsnorm-bench --csv $OUT/bench$k.csv > /dev/null 2>&1; el "default bench $k rc=$?"
  python3 scripts/bench_table.py $OUT/bench$k.csv > $OUT/bench_table$k.txt 2>&1; head -8 $OUT/bench_table$k.txt
done
head -75 $OUT/byname_fwd.txt; cat $OUT/byname_fp8.txt
cd $OUT && tar -czf ab.tgz ab byname_fwd.csv byname_fp8.csv && rm -rf ab byname_fwd.csv byname_fp8.csv && tar -czf logs.tgz *.log *.rc bench_table*.txt cert 2>/dev/null && rm -rf *.log *.rc bench_table*.txt cert; ls
el done
