#!/usr/bin/env bash
# Session 17 call 7: the ring's test case (its reference comparison under a dynamic scale changed)
# and the cluster_row test case beside it (check_many_rows without a reference), main's build.
set -u
OUT=${OUT:-/tmp/out}; L=$OUT/logs; mkdir -p $L; B=build/gpu; t0=$(date +%s)
el() { echo "[$(( $(date +%s) - t0 ))s] $*"; }
xz -dc .probe/prebuilt.tar.xz | tar -xf - || { echo unpack failed; exit 1; }
el "prebuilt $(cut -c1-12 $B/PREBUILT_COMMIT) source $(cut -c1-12 .source-commit)"
timeout 280 $B/kernels/tests/test_gpu_forward -w NoTests "forward: fwd.bulk_ring over many rows*" > $L/ring.log 2>&1 &
timeout 280 $B/kernels/tests/test_gpu_forward -w NoTests "forward: fwd.cluster_row over many rows*" > $L/cluster.log 2>&1 &
wait
el "ring: $(tail -3 $L/ring.log | grep -E 'passed|failed' | tr '\n' ' ')"
el "cluster: $(tail -3 $L/cluster.log | grep -E 'passed|failed' | tr '\n' ' ')"
grep -A8 FAILED $L/ring.log | cut -c1-200 | head -30
cd $OUT && tar -czf logs.tgz logs && rm -rf logs; cd - >/dev/null
el done
