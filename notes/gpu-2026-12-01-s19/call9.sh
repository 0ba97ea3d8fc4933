#!/usr/bin/env bash
# Session 19 call 9: the GPU test cases call 8's 420 s limit cut or did not reach (its two binaries
# and the corpus ran side by side), in three processes side by side.
set -u
OUT=${OUT:-/tmp/out}; B=build/gpu; t0=$(date +%s)
el() { echo "[$(( $(date +%s) - t0 ))s] $*"; }
xz -dc .probe/prebuilt.tar.xz | tar -xf - || { echo unpack failed; exit 1; }
el "prebuilt $(cut -c1-12 $B/PREBUILT_COMMIT) source $(cut -c1-12 .source-commit)"
(timeout 330 $B/kernels/tests/test_gpu_forward -w NoTests "forward: fwd.packed_rows*,forward: 64-bit offsets*" > $OUT/p1.log 2>&1; echo "rc=$?" > $OUT/p1.rc) &
(timeout 330 $B/kernels/tests/test_gpu_backward -w NoTests "staged variants over many rows*,bwd.staged_streams' two kernels*,packed rows of odd width*" > $OUT/p2.log 2>&1; echo "rc=$?" > $OUT/p2.rc) &
(timeout 330 $B/kernels/tests/test_gpu_backward -w NoTests "bwd.staged_cluster over many rows*,100 repeated runs*,64-bit offsets: a bf16 backward*" > $OUT/p3.log 2>&1; echo "rc=$?" > $OUT/p3.rc) &
wait
for p in p1 p2 p3; do el "$p $(cat $OUT/$p.rc) $(grep -E 'passed|failed' $OUT/$p.log | tail -2 | tr '\n' ' ')"; grep -B3 -A8 FAILED $OUT/$p.log | head -20; done
cd $OUT && tar -czf logs.tgz *.log *.rc && find . -maxdepth 1 -type f ! -name logs.tgz -delete; cd - >/dev/null
el done
