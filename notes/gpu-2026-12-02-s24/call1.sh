#!/usr/bin/env bash
# Session 24 call 1, main (prebuilt at the session's start): bwd.packed_rows' own GPU case alone
# (session 23 left it unfinished: 250 s as one of 15 processes with two OpenMP threads) through
# `scripts/gpu_session.sh prebuilt packed` (its first run on a GPU), then the default bench (the
# session's baseline) and ncu's warp-state and scheduler sections on the packed kernels at
# 32768 x 1025 bf16 (fused add and backward): what holds them now that they issue ~0.57 of the slots.
set -u
OUT=${OUT:-/tmp/out}; B=build/gpu; t0=$(date +%s)
el() { echo "[$(( $(date +%s) - t0 ))s] $*"; }
PACKED_TIMEOUT=420 OUT=$OUT bash scripts/gpu_session.sh prebuilt packed > $OUT/session.log 2>&1
el "gpu_session rc=$?"; tail -30 $OUT/session.log
timeout 60 $B/bench/rmsnorm-bench --csv $OUT/bench1.csv > /dev/null 2>&1; el "default bench rc=$?"
python3 scripts/bench_table.py $OUT/bench1.csv > $OUT/bench_table1.txt 2>&1; head -8 $OUT/bench_table1.txt
NCU="ncu --clock-control none --section WarpStateStats --section SchedulerStats --section LaunchStats --section Occupancy -k regex:packed --launch-skip 2 --launch-count 1 --page raw"
timeout 90 $NCU $B/bench/rmsnorm-bench --variant fwd.packed_rows --op add_forward --dtype bf16 --rows 32768 --dims 1025 --iters 3 > $OUT/ncu_fwd_add.txt 2>&1; el "ncu fwd add rc=$?"
timeout 90 $NCU $B/bench/rmsnorm-bench --variant 'bwd.packed_rows*' --op backward --dtype bf16 --rows 32768 --dims 1025 --iters 3 > $OUT/ncu_bwd.txt 2>&1; el "ncu bwd rc=$?"
for f in ncu_fwd_add ncu_bwd; do echo "== $f"; grep -E "gpu__time_duration.sum|smsp__average_warps_issue_stalled_[a-z_]*_per_issue_active.ratio|smsp__issue_active.avg.pct|smsp__warps_eligible.avg.per_cycle_active|smsp__warps_active.avg.per_cycle_active|sm__warps_active.avg.pct_of_peak|launch__occupancy_limit|launch__registers_per_thread|launch__grid_size|launch__block_size" $OUT/$f.txt | awk '$NF+0 > 0.005 || !/stalled/' | head -45; done
cd $OUT && tar -czf logs.tgz *.log *.rc *.txt packed_cert 2>/dev/null && rm -rf *.log *.rc packed_cert ncu_*.txt; ls
el done
