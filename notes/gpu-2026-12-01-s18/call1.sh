#!/usr/bin/env bash
# Session 18 call 1: fwd.bulk_ring's fused amax (FP8 forms) — tests, certify, corpus, sanitizers,
# by-name bench against fwd.large_d / fwd.large_d_pair; the backward's dg cost (--no-dg probe).
set -u
OUT=${OUT:-/tmp/out}; B=build/gpu; t0=$(date +%s)
el() { echo "[$(( $(date +%s) - t0 ))s] $*"; }
xz -dc .probe/prebuilt.tar.xz | tar -xf - || { echo unpack failed; exit 1; }
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv > $OUT/device.txt
el "prebuilt $(cut -c1-12 $B/PREBUILT_COMMIT) source $(cut -c1-12 .source-commit)"
$B/kernels/tests/test_launch_configs > $OUT/launch_configs.txt 2>&1; el "launch_configs rc=$? $(tail -1 $OUT/launch_configs.txt)"
(RMSNORM_VARIANTS=fwd.bulk_ring timeout 300 $B/kernels/tests/test_gpu_forward -w NoTests > $OUT/shard.log 2>&1; echo "shard rc=$?" > $OUT/shard.rc) &
(timeout 300 $B/cli/rmsnorm-cert certify fwd.bulk_ring --cases 12 --jobs 4 --out $OUT/cert > $OUT/certify.log 2>&1; echo "certify rc=$?" > $OUT/certify.rc) &
(timeout 300 $B/cli/rmsnorm-cert replay corpora --variant fwd.bulk_ring > $OUT/replay.log 2>&1; echo "replay rc=$?" > $OUT/replay.rc) &
wait
el "$(cat $OUT/shard.rc) $(tail -2 $OUT/shard.log | tr '\n' ' ')"
el "$(cat $OUT/certify.rc) $(grep -E 'PASS|FAIL' $OUT/certify.log | tail -3 | tr '\n' ' ')"
el "$(cat $OUT/replay.rc) $(grep -E '^replay:' $OUT/replay.log | tr '\n' ' ')"
grep -B2 -A12 "FAILED\|failed" $OUT/shard.log | head -40
grep -E "^fail" $OUT/replay.log | head
for c in corpora/paths/fwd_bulk_ring_fused_amax_add.case corpora/paths/fwd_bulk_ring_fused_amax_f32w.case; do
  for tool in racecheck memcheck synccheck; do
    timeout 90 compute-sanitizer --tool $tool --error-exitcode 9 $B/cli/rmsnorm-cert replay $c --variant fwd.bulk_ring > $OUT/san_${tool}_$(basename $c .case).log 2>&1
    el "san $tool $(basename $c) rc=$? $(grep -E 'ERROR SUMMARY|hazard|^replay:' $OUT/san_${tool}_$(basename $c .case).log | tr '\n' ' ')"
  done
done
# By name: FP8 forms at large D.
timeout 200 $B/bench/rmsnorm-bench --variant 'fwd.large_d,fwd.large_d_pair,fwd.bulk_ring' --op forward_quant,add_forward_quant \
  --dtype bf16 --rows 512,4096,8192,32768 --dims 40960,57344,65536 --csv $OUT/byname1.csv > $OUT/byname1.txt 2>&1; el "bench 1 rc=$?"
timeout 120 $B/bench/rmsnorm-bench --variant 'fwd.large_d,fwd.large_d_pair,fwd.bulk_ring' --op forward_quant,add_forward_quant \
  --dtype bf16,f16 --rows 512,4096,32768 --dims 65536 --csv $OUT/byname2.csv > $OUT/byname2.txt 2>&1; el "bench 2 rc=$?"
# The backward's dg stages: the same shapes with and without dg, twice.
for k in 1 2; do
  timeout 60 $B/bench/rmsnorm-bench --op backward,add_backward --dtype bf16 --rows 4096,8192,32768 --dims 4096,8192,16384 --csv $OUT/bwd_dg$k.csv > $OUT/bwd_dg$k.txt 2>&1
  timeout 60 $B/bench/rmsnorm-bench --op backward,add_backward --dtype bf16 --rows 4096,8192,32768 --dims 4096,8192,16384 --no-dg --csv $OUT/bwd_nodg$k.csv > $OUT/bwd_nodg$k.txt 2>&1
  el "bwd dg probe $k"
done
for k in 1 2; do python3 scripts/bench_variants.py $OUT/byname$k.csv > $OUT/byname${k}_table.txt 2>&1; done
cd $OUT && tar -czf logs.tgz *.log *.txt *.csv cert 2>/dev/null; cd - >/dev/null
el done
cat $OUT/byname1_table.txt | head -80
cat $OUT/byname2_table.txt | head -40
paste -d" " <(cut -d, -f2,4,5,6,8,12 $OUT/bwd_dg1.csv) <(cut -d, -f8 $OUT/bwd_nodg1.csv) <(cut -d, -f8,12 $OUT/bwd_dg2.csv) <(cut -d, -f8 $OUT/bwd_nodg2.csv) | column -t
