#!/usr/bin/env bash
# Session 22 call 5: the final build (0c8ef39). The fused add + FP8 by name at R = 1024 and 2048
# (packed_rows is dispatched from R = 4096: call 1 measured 0.82-1.04x at 512 before the predicated
# form), and ncu of fwd.packed_rows' fused add and fused add + FP8 at 32768 x 1025 bf16 side by side
# (the FP8 epilogue's share of the instructions and stalls), for the next session's plan.
set -u
OUT=${OUT:-/tmp/out}; B=build/gpu; t0=$(date +%s)
el() { echo "[$(( $(date +%s) - t0 ))s] $*"; }
xz -dc .probe/prebuilt.tar.xz | tar -xf - || { echo unpack failed; exit 1; }
el "build $(cut -c1-12 $B/PREBUILT_COMMIT) source $(cut -c1-12 .source-commit)"
timeout 100 $B/bench/rmsnorm-bench --variant fwd.packed_rows,fwd.realigned_row,fwd.element_row --op add_forward_quant --dtype bf16,f32 --rows 1024,2048 --dims 513,1025,2049,4097,8191 --csv $OUT/byname_mid.csv > /dev/null 2>&1; el "by name rc=$?"
python3 scripts/bench_variants.py $OUT/byname_mid.csv > $OUT/byname_mid.txt 2>&1; head -40 $OUT/byname_mid.txt
for op in add_forward add_forward_quant; do
  timeout 120 ncu --clock-control none --section WarpStateStats --section SchedulerStats --section SpeedOfLight --section InstructionStats --metrics smsp__inst_executed.sum,smsp__pcsamp_warps_issue_stalled_barrier,smsp__pcsamp_warps_issue_stalled_long_scoreboard,smsp__pcsamp_warps_issue_stalled_short_scoreboard,smsp__pcsamp_warps_issue_stalled_wait,smsp__pcsamp_warps_issue_stalled_math_pipe_throttle,smsp__pcsamp_warps_issue_stalled_lg_throttle,smsp__pcsamp_warps_issue_stalled_mio_throttle -k regex:fwd_packed --launch-skip 3 --launch-count 1 $B/bench/rmsnorm-bench --variant fwd.packed_rows --op $op --dtype bf16 --rows 32768 --dims 1025 --iters 5 > $OUT/ncu_$op.log 2>&1; el "ncu $op rc=$?"
  grep -E "Duration|Issued Warp Per|No Eligible|Eligible Warps|Warp Cycles Per Issued|inst_executed.sum|stalled_" $OUT/ncu_$op.log | head -20
done
cd $OUT && tar -czf logs.tgz *.log *.txt 2>/dev/null && rm -f *.log; ls
el done
