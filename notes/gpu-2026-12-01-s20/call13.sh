#!/usr/bin/env bash
# Session 20 call 13 (typed inline, kept here): the stagger GPU test case alone on fd36673 (its
# add + FP8 shape at 5120 made valid: call 12 had it with the llama convention, which has no FP8 output).
xz -dc .probe/prebuilt.tar.xz | tar -xf - && echo "prebuilt $(cut -c1-12 build/gpu/PREBUILT_COMMIT)" && timeout 300 build/gpu/kernels/tests/test_gpu_forward -w NoTests "forward: fwd.block_row's staggered first wave*" > $OUT/t_stagger.log 2>&1; echo "rc=$?"; tail -3 $OUT/t_stagger.log
