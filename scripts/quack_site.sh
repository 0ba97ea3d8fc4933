#!/usr/bin/env bash
# QuACK (quack-kernels, CuTe DSL) for an offline GPU host that takes files in loads of at most
# 64 MiB: packed here in two parts, each under that, and put together there as a directory to put
# on PYTHONPATH (docs/performance.md, "The peers").
#
#   scripts/quack_site.sh pack DIR      (a machine with PyPI) DIR/part1, DIR/part2
#   scripts/quack_site.sh unpack SITE PART1 PART2
#                                       (the GPU host) SITE, then prints its PYTHONPATH
#
# The CuTe DSL's compiler wheel (nvidia-cutlass-dsl-libs-cu13, 92 MB) holds two shared libraries,
# already stripped: the MLIR bindings (193 MB, 50 MB as xz -9) and the runtime (44 MB, 14 MB as
# xz). part1 is the first alone; part2 the second, the rest of that wheel and the small wheels
# (QuACK, the DSL's Python side (its libs-base and libs-core wheels: `cutlass.cutlass_dsl` is in
# the latter), tvm-ffi, its DLPack extension, einops, and cuda-bindings,
# protobuf and typing-extensions, which unpack only where the host's Python lacks them).
set -euo pipefail
QUACK_VERSION=${QUACK_VERSION:-0.6.5}
DSL_VERSION=${DSL_VERSION:-4.8.1}
IR_SO=nvidia_cutlass_dsl/dsl_packages/cutlass/_mlir/_mlir_libs/_cutlass_ir.cu13.cpython-312-x86_64-linux-gnu.so
RT_SO=nvidia_cutlass_dsl/cu13/lib/libcute_dsl_runtime.so
SMALL="quack_kernels nvidia_cutlass_dsl-$DSL_VERSION nvidia_cutlass_dsl_libs_base nvidia_cutlass_dsl_libs_core apache_tvm_ffi torch_c_dlpack_ext einops"
# module:wheel, unpacked only where the host cannot import the module
IF_MISSING="cuda.bindings:cuda_bindings google.protobuf:protobuf typing_extensions:typing_extensions"

usage() { sed -n '2,14p' "$0" | sed 's/^# \{0,1\}//'; exit "${1:-1}"; }

pack() {
  local dir=$1 tmp
  mkdir -p "$dir/part1" "$dir/part2"
  tmp=$(mktemp -d); trap 'rm -rf "$tmp"' RETURN
  # The GPU host's Python (3.12, x86-64, glibc 2.28 or newer), whatever runs this script.
  pip download --quiet --no-deps --only-binary=:all: --python-version 3.12 --platform manylinux_2_28_x86_64 \
    -d "$tmp/w" "quack-kernels==$QUACK_VERSION" "nvidia-cutlass-dsl==$DSL_VERSION" \
    "nvidia-cutlass-dsl-libs-base==$DSL_VERSION" "nvidia-cutlass-dsl-libs-core==$DSL_VERSION" \
    "nvidia-cutlass-dsl-libs-cu13==$DSL_VERSION" \
    "apache-tvm-ffi<0.2" torch-c-dlpack-ext einops cuda-bindings protobuf typing-extensions
  python3 -m zipfile -e "$tmp"/w/nvidia_cutlass_dsl_libs_cu13-*.whl "$tmp/libs"
  xz -T0 -9 -c "$tmp/libs/$IR_SO" > "$dir/part1/ir.so.xz"
  xz -T0 -9 -c "$tmp/libs/$RT_SO" > "$dir/part2/rt.so.xz"
  rm "$tmp/libs/$IR_SO" "$tmp/libs/$RT_SO"
  tar czf "$dir/part2/libs_rest.tgz" -C "$tmp/libs" .
  find "$tmp/w" -name '*.whl' ! -name 'nvidia_cutlass_dsl_libs_cu13-*' -exec cp {} "$dir/part2/" \;
  du -sh "$dir/part1" "$dir/part2"
}

unpack() {
  local site=$1 p1=$2 p2=$3 w m
  for f in "$p1/ir.so.xz" "$p2/rt.so.xz" "$p2/libs_rest.tgz"; do
    [ -f "$f" ] || { echo "quack_site.sh: $f is missing" >&2; exit 1; }
  done
  rm -rf "$site"; mkdir -p "$site"
  tar xzf "$p2/libs_rest.tgz" -C "$site"
  xz -dc "$p1/ir.so.xz" > "$site/$IR_SO"
  xz -dc "$p2/rt.so.xz" > "$site/$RT_SO"
  chmod +x "$site/$IR_SO" "$site/$RT_SO"
  for w in $SMALL; do
    set -- "$p2/$w"*.whl
    [ -f "$1" ] || { echo "quack_site.sh: no $w wheel in $p2" >&2; exit 1; }
    python3 -m zipfile -e "$1" "$site"
  done
  for m in $IF_MISSING; do
    python3 -c "import ${m%%:*}" 2> /dev/null && continue
    set -- "$p2/${m#*:}"*.whl
    [ -f "$1" ] && python3 -m zipfile -e "$1" "$site" && echo "quack_site.sh: ${m%%:*} from its wheel (the host has none)" >&2
  done
  # The DSL's own .pth file puts dsl_packages on the path; PYTHONPATH entries read no .pth files.
  echo "$site:$site/nvidia_cutlass_dsl/dsl_packages"
}

case "${1:-}" in
  pack) [ $# -eq 2 ] || usage; pack "$2" ;;
  unpack) [ $# -eq 4 ] || usage; unpack "$2" "$3" "$4" ;;
  -h | --help) usage 0 ;;
  *) usage ;;
esac
