#!/usr/bin/env bash
# Session 19 call 8: the final build (dispatch hints of call 1; kernels SASS-identical to what ran
# in session 18): the whole GPU test binaries and the whole corpus, side by side.
set -u
OUT=${OUT:-/tmp/out}; B=build/gpu; t0=$(date +%s)
el() { echo "[$(( $(date +%s) - t0 ))s] $*"; }
xz -dc .probe/prebuilt.tar.xz | tar -xf - || { echo unpack failed; exit 1; }
el "prebuilt $(cut -c1-12 $B/PREBUILT_COMMIT) source $(cut -c1-12 .source-commit)"
(timeout 420 $B/kernels/tests/test_gpu_forward -w NoTests > $OUT/gpu_forward.log 2>&1; echo "rc=$?" > $OUT/gpu_forward.rc) &
(timeout 420 $B/kernels/tests/test_gpu_backward -w NoTests > $OUT/gpu_backward.log 2>&1; echo "rc=$?" > $OUT/gpu_backward.rc) &
(timeout 420 $B/cli/rmsnorm-cert replay corpora --quiet > $OUT/replay.log 2>&1; echo "rc=$?" > $OUT/replay.rc) &
wait
el "test_gpu_forward $(cat $OUT/gpu_forward.rc) $(grep -E 'passed|failed' $OUT/gpu_forward.log | tail -1)"; grep -B3 -A8 FAILED $OUT/gpu_forward.log | head -30
el "test_gpu_backward $(cat $OUT/gpu_backward.rc) $(grep -E 'passed|failed' $OUT/gpu_backward.log | tail -1)"; grep -B3 -A8 FAILED $OUT/gpu_backward.log | head -30
el "replay $(cat $OUT/replay.rc) $(grep -E '^replay:' $OUT/replay.log)"; grep -E "^fail" $OUT/replay.log | head -5
cd $OUT && tar -czf logs.tgz *.log *.rc && find . -maxdepth 1 -type f ! -name logs.tgz -delete; cd - >/dev/null
el done
