#!/usr/bin/env bash
# Builds the GPU preset here and packs what a lent GPU runs into one archive, so a call there
# skips its build (about 100 s of a 600 s call): the GPU test binaries, every property-suite
# executable (certify runs each: session 13's first archive lacked properties_case_file, and
# every certificate of that call failed on it),
# rmsnorm-cert, rmsnorm-bench, every kernel test binary (session 14's call 3 asked for test_dispatch,
# which the archive lacked) and every CTestTestfile.cmake (ctest then
# works there: the device's copy of the tree sits at the same absolute path), with the commit
# they were built from. The binaries share their device code, so one xz stream with a large
# dictionary keeps the archive near one binary's compressed size (session 12: 217 MB -> 11 MB).
# Built with this machine's CUDA 13.0 for sm_90 (+ PTX) against glibc 2.36; the H200 host
# (Ubuntu 24.04, CUDA 13.0 driver) runs them as they are.
#
# Usage: scripts/pack_prebuilt.sh [ARCHIVE]   (default .probe/prebuilt.tar.xz; carry its folder)
# There: scripts/gpu_session.sh prebuilt ...  (instead of `build`; PREBUILT=ARCHIVE)
# A second archive (a candidate) unpacked beside it keeps the paths of the tree it was built in:
# its rmsnorm-cert then needs RMSNORM_PROPERTY_EXES (its properties_* executables, ':'-separated)
# and RMSNORM_CORPUS (this tree's corpora), or its certificates find no property suite (session 14,
# call 1: "properties 0 pass").
set -euo pipefail
OUT=${1:-.probe/prebuilt.tar.xz}
B=build/gpu
cmake --preset gpu > /dev/null
cmake --build --preset gpu -j "$(nproc)"
if [ -n "$(git status --porcelain --untracked-files=no)" ]; then
  echo "pack_prebuilt: the tree has uncommitted changes; the archive names $(git rev-parse --short HEAD) plus them" >&2
fi
git rev-parse HEAD > $B/PREBUILT_COMMIT
mkdir -p "$(dirname "$OUT")"
tar -cf - $B/PREBUILT_COMMIT $(find $B/kernels/tests -maxdepth 1 -type f -name 'test_*' -perm -u+x) \
  $(find $B/properties -maxdepth 1 -type f -name 'properties_*' -perm -u+x) \
  $B/cli/rmsnorm-cert $B/bench/rmsnorm-bench $B/bench/rmsnorm-timeline $(find $B -name CTestTestfile.cmake) |
  xz -T1 --lzma2=preset=6,dict=256MiB > "$OUT"
echo "pack_prebuilt: $OUT ($(du -h "$OUT" | cut -f1)) from $(cut -c1-12 $B/PREBUILT_COMMIT)"
