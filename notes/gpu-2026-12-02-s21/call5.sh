#!/usr/bin/env bash
# Session 21 call 5: test_gpu_forward after its odd-width cases moved into one helper
# (check_odd_widths): the fwd.packed_rows and fwd.shifted_row cases, side by side.
set -u
OUT=${OUT:-/tmp/out}; B=build/gpu; t0=$(date +%s)
el() { echo "[$(( $(date +%s) - t0 ))s] $*"; }
xz -dc .probe/prebuilt.tar.xz | tar -xf - || { echo unpack failed; exit 1; }
el "build $(cut -c1-12 $B/PREBUILT_COMMIT) source $(cut -c1-12 .source-commit)"
TF=$B/kernels/tests/test_gpu_forward
(timeout 270 $TF -w NoTests "forward: fwd.shifted_row*" > $OUT/t_shifted.log 2>&1; echo "rc=$?" > $OUT/t_shifted.rc) &
(timeout 270 $TF -w NoTests "forward: fwd.packed_rows*" > $OUT/t_packed.log 2>&1; echo "rc=$?" > $OUT/t_packed.rc) &
wait
for p in t_shifted t_packed; do el "$p $(cat $OUT/$p.rc) $(grep -E 'passed|failed' $OUT/$p.log | tail -2 | tr '\n' ' ' | cut -c1-200)"; grep -B3 -A10 FAILED $OUT/$p.log | head -20; done
cd $OUT && tar -czf logs.tgz *.log *.rc && rm -f *.log *.rc; el done
