#!/usr/bin/env bash
# Smallest check of the GPU host: configure with the carried Debian packages, build the library.
set -x
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv
cmake --version | head -1; nvcc --version | tail -1; g++ --version | head -1
cmake --preset gpu 2>&1 | tail -5
cmake --build --preset gpu -j 16 --target rmsnorm rmsnorm_harness 2>&1 | tail -5
