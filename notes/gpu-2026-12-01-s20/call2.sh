#!/usr/bin/env bash
# Session 20 call 2: rmsnorm-timeline with the weight prefetch forms (twice), then the GPU tests of
# the R = 2 bound and the two backward cases session 19 did not finish, side by side (prebuilt).
set -u
OUT=${OUT:-/tmp/out}; B=build/gpu; t0=$(date +%s)
el() { echo "[$(( $(date +%s) - t0 ))s] $*"; }
xz -dc .probe/prebuilt.tar.xz | tar -xf - || { echo unpack failed; exit 1; }
el "prebuilt $(cut -c1-12 $B/PREBUILT_COMMIT) source $(cut -c1-12 .source-commit)"
S=4096x8192,8192x4096,4096x16384,32768x8192,16384x4096,2048x16384
$B/bench/rmsnorm-timeline --shapes $S --csv $OUT/stamps1.csv > $OUT/tl1.txt 2>&1; el "tl1 rc=$?"
$B/bench/rmsnorm-timeline --shapes $S > $OUT/tl2.txt 2>&1; el "tl2 rc=$?"
grep -E "^shape|^events|^ratio|^gpre|^fwd " $OUT/tl1.txt; echo ---; grep -E "^ratio" $OUT/tl2.txt
TB=$B/kernels/tests/test_gpu_backward
$B/kernels/tests/test_dispatch > $OUT/dispatch.log 2>&1; el "test_dispatch rc=$? $(tail -2 $OUT/dispatch.log | tr '\n' ' ')"
$TB -w NoTests "the dispatcher's backward choice*" > $OUT/bwd_dispatch.log 2>&1; el "bwd dispatcher rc=$? $(tail -2 $OUT/bwd_dispatch.log | tr '\n' ' ')"
for v in bwd.staged_streams.vec8 bwd.staged_rows.vec8 bwd.staged_cluster.vec8; do
  (RMSNORM_VARIANTS=$v timeout 420 $TB -w NoTests "staged variants over many rows*" > $OUT/many_$v.log 2>&1; echo "rc=$?" > $OUT/many_$v.rc) &
done
(timeout 420 $TB -w NoTests "packed rows of odd width*" > $OUT/packed.log 2>&1; echo "rc=$?" > $OUT/packed.rc) &
wait
for f in $OUT/many_*.rc $OUT/packed.rc; do el "$(basename $f .rc) $(cat $f) $(grep -E 'passed|failed' ${f%.rc}.log | tail -2 | tr '\n' ' ')"; grep -B3 -A8 FAILED ${f%.rc}.log | head -20; done
cd $OUT && xz -9 stamps1.csv && tar -czf logs.tgz *.log *.rc && rm -f *.log *.rc; ls
el done
