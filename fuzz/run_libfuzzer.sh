#!/usr/bin/env bash
# Build the libFuzzer target with clang + ASan + UBSan into build-fuzz (no CUDA, no tests) and run
# it for a fixed time. Usage: fuzz/run_libfuzzer.sh [SECONDS=60] [extra libFuzzer args...]
# Exit status: 0 no finding; libFuzzer's non-zero status (crash-*/leak-* files in build-fuzz/findings).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
seconds=${1:-60}
shift || true
build=$root/build-fuzz
# Every library the target links is instrumented too: sanitizer flags for the whole build.
san="-fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer"
cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ \
  -DCMAKE_CXX_FLAGS="$san" -DCMAKE_EXE_LINKER_FLAGS="$san" \
  -DRMSNORM_CUDA=OFF -DRMSNORM_TESTS=OFF -DRMSNORM_FUZZER=ON > "$build.configure.log" 2>&1 \
  || { tail -30 "$build.configure.log"; exit 2; }
ninja -C "$build" -j"${FUZZ_JOBS:-2}" fuzz_case
mkdir -p "$build/corpus" "$build/findings"
# The checked-in seeds start the corpus; what libFuzzer learns stays in build-fuzz/corpus.
cp -n "$root"/fuzz/corpus/* "$build/corpus/" 2>/dev/null || true
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
export OMP_NUM_THREADS=1
exec "$build/fuzz/fuzz_case" "$build/corpus" -dict="$root/fuzz/case.dict" -max_total_time="$seconds" \
  -max_len=4096 -timeout=30 -rss_limit_mb=4096 -artifact_prefix="$build/findings/" -print_final_stats=1 "$@"
