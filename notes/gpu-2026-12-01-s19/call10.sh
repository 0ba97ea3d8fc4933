#!/usr/bin/env bash
# Session 19 call 10 (typed inline, kept here): call 9's p2 cases that never started, side by side,
# 150 s each (the device time left): on call 9's unpacked build (the device kept build/gpu).
B=build/gpu; (timeout 150 $B/kernels/tests/test_gpu_backward -w NoTests "bwd.staged_streams' two kernels*" > $OUT/a.log 2>&1; echo "rc=$?" >> $OUT/a.log) & (timeout 150 $B/kernels/tests/test_gpu_backward -w NoTests "packed rows of odd width*" > $OUT/b.log 2>&1; echo "rc=$?" >> $OUT/b.log) & wait; tail -3 $OUT/a.log; tail -3 $OUT/b.log
