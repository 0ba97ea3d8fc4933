#!/usr/bin/env bash
# Everything the offline GPU host lacks, fetched on a machine with Debian's and PyPI's registries
# into one folder that travels with the tree (README, "Building on an offline GPU host";
# docs/performance.md, "The peers"):
#
#   scripts/gpu_deps.sh [DIR]        (default .deps)
#
#   DIR/root                 catch2 and librapidcheck-dev, unpacked: the gpu preset's prefix
#   DIR/pylib                Liger-Kernel's wheel, unzipped (scripts/gpu_session.sh peers puts it
#                            on PYTHONPATH)
#   DIR/flashinfer/include   FlashInfer's header-only kernels, from its wheel (the build step
#                            builds the FlashInfer plugin where they are)
#   DIR/quack/part1, part2   QuACK and the CuTe DSL, two loads (scripts/quack_site.sh pack)
#
# Then it prints each part's size: a load to the GPU host holds at most 64 MiB, so quack/part1
# travels alone. Versions: LIGER_VERSION, FLASHINFER_VERSION (below); QuACK's are quack_site.sh's.
# SKIP: parts not fetched, from "debs liger flashinfer quack" (e.g. SKIP="quack").
# A part already there is kept; delete it to fetch it again.
set -euo pipefail
LIGER_VERSION=${LIGER_VERSION:-0.8.5}
FLASHINFER_VERSION=${FLASHINFER_VERSION:-0.7.4}
SKIP=" ${SKIP:-} "
QUACK_SITE=${QUACK_SITE:-$(dirname "$0")/quack_site.sh}

case "${1:-}" in
  -h | --help) awk 'NR > 1 && !/^#/ { exit } NR > 1 { sub(/^# ?/, ""); print }' "$0"; exit 0 ;;
  -*) echo "gpu_deps.sh: unknown option $1 (see --help)" >&2; exit 2 ;;
esac
dir=${1:-.deps}
[ $# -le 1 ] || { echo "gpu_deps.sh: one folder at most (see --help)" >&2; exit 2; }
mkdir -p "$dir"
dir=$(cd "$dir" && pwd)
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
wanted() { [[ "$SKIP" != *" $1 "* ]]; }
# A wheel for the GPU host's Python (3.12, x86-64, glibc 2.28 or newer), whatever runs this.
wheel() {
  local into=$tmp/$1 spec=$2 found
  pip download --quiet --no-deps --only-binary=:all: --python-version 3.12 --platform manylinux_2_28_x86_64 \
    -d "$into" "$spec"
  found=$(find "$into" -maxdepth 1 -name '*.whl' | head -1)
  [ -n "$found" ] || { echo "gpu_deps.sh: pip left no wheel for ${spec%%=*}" >&2; exit 1; }
  echo "$found"
}

if wanted debs && [ ! -d "$dir/root" ]; then
  mkdir -p "$tmp/debs"
  (cd "$tmp/debs" && apt-get download catch2 librapidcheck-dev) ||
    { echo "gpu_deps.sh: apt-get download failed (are the package lists there? apt-get update)" >&2; exit 1; }
  for f in "$tmp"/debs/*.deb; do dpkg -x "$f" "$tmp/root"; done
  mv "$tmp/root" "$dir/root"
fi
if wanted liger && [ ! -d "$dir/pylib/liger_kernel" ]; then
  w=$(wheel liger "liger-kernel==$LIGER_VERSION")
  python3 -m zipfile -e "$w" "$dir/pylib"
fi
if wanted flashinfer && [ ! -d "$dir/flashinfer/include" ]; then
  w=$(wheel flashinfer "flashinfer-python==$FLASHINFER_VERSION")
  python3 -m zipfile -e "$w" "$tmp/fi"
  [ -d "$tmp/fi/flashinfer/data/include" ] || { echo "gpu_deps.sh: no flashinfer/data/include in its wheel" >&2; exit 1; }
  mkdir -p "$dir/flashinfer"
  mv "$tmp/fi/flashinfer/data/include" "$dir/flashinfer/include"
fi
if wanted quack && [ ! -d "$dir/quack/part1" ]; then
  "$QUACK_SITE" pack "$dir/quack" > /dev/null
fi

echo "gpu_deps.sh: in $dir, bytes (a load holds at most 64 MiB):"
for p in root pylib flashinfer quack/part1 quack/part2; do
  [ -e "$dir/$p" ] && printf '  %-12s %s\n' "$p" "$(du -sh --apparent-size "$dir/$p" | cut -f1)"
done
exit 0
