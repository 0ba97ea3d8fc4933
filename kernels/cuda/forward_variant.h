// The CUDA forward family's variant factory: one Variant per (mutant, path), shared by the
// products' registration (forward.cu) and the mutants' (kernels/mutants).
#pragma once

#include <string>
#include <utility>

#include "forward_instances.h"

namespace rmsnorm::cuda {

using fwd::Path;

template <Path P>
AccumShape shape(std::int64_t dim) {
  return fwd::shape_of(P, dim);
}

// Only the (mutant, path) pair named here is referenced, so only its launcher is instantiated
// (in its own forward_*.cu unit; this file sees extern declarations).
template <Mutant M, Path P>
Variant make(std::string name, std::string description) {
  Variant v;
  v.name = std::move(name);
  v.description = std::move(description);
  v.memory = Memory::device;
  v.mutant = M;
  v.ops = fwd::ops_mask<M, P == Path::staged_rows>() & fwd::path_ops(P);
  v.row_shape = shape<P>;
  if constexpr (P == Path::warp_row) {
    v.can_implement_forward = fwd::can_warp_row<M>;
    v.run_forward = fwd::run_warp_row<M>;
  } else if constexpr (P == Path::block_row) {
    v.can_implement_forward = fwd::can_block_row<M>;
    v.run_forward = fwd::run_block_row<M>;
  } else if constexpr (P == Path::staged_rows) {
    v.can_implement_forward = fwd::can_staged_rows<M>;
    v.run_forward = fwd::run_staged_rows<M>;
  } else if constexpr (P == Path::large_d) {
    v.can_implement_forward = fwd::can_large_d<M>;
    v.run_forward = fwd::run_large_d<M>;
  } else if constexpr (P == Path::large_d_pair) {
    v.can_implement_forward = fwd::can_large_d_pair<M>;
    v.run_forward = fwd::run_large_d_pair<M>;
  } else if constexpr (P == Path::element_row) {
    v.can_implement_forward = fwd::can_element_row<M>;
    v.run_forward = fwd::run_element_row<M>;
  } else if constexpr (P == Path::realigned_row) {
    v.can_implement_forward = fwd::can_realigned_row<M>;
    v.run_forward = fwd::run_realigned_row<M>;
  } else if constexpr (P == Path::packed_rows) {
    v.can_implement_forward = fwd::can_packed_rows<M>;
    v.run_forward = fwd::run_packed_rows<M>;
  } else if constexpr (P == Path::cluster_row) {
    v.can_implement_forward = fwd::can_cluster_row<M>;
    v.run_forward = fwd::run_cluster_row<M>;
  } else if constexpr (P == Path::bulk_ring) {
    v.can_implement_forward = fwd::can_bulk_ring<M>;
    v.run_forward = fwd::run_bulk_ring<M>;
  } else if constexpr (P == Path::shifted_row) {
    v.can_implement_forward = fwd::can_shifted_row<M>;
    v.run_forward = fwd::run_shifted_row<M>;
  } else {
    v.can_implement_forward = fwd::can_scalar<M>;
    v.run_forward = fwd::run_scalar<M>;
  }
  // Declared ranges (the widest over types; FP8 and fp32 rows may narrow them).
  if constexpr (P == Path::staged_rows) v.min_dim = fwd::kStagedMinDim;
  v.max_dim = P == Path::warp_row      ? 1024
              : P == Path::staged_rows ? 8192
              : P == Path::block_row   ? 16384
              : P == Path::cluster_row ? fwd::kFwdClusterMaxDim
              : P == Path::bulk_ring   ? fwd::kRingMaxDim16
              : (P == Path::element_row || P == Path::realigned_row || P == Path::packed_rows ||
                 P == Path::shifted_row)                                                      ? 8192
                                       : std::int64_t{1} << 24;
  // M19 takes misaligned rows down the vector path: it claims any alignment, so draws reach it.
  v.aligned_rows = (P == Path::warp_row || P == Path::block_row || P == Path::staged_rows || P == Path::large_d ||
                    P == Path::large_d_pair || P == Path::cluster_row || P == Path::bulk_ring) &&
                   M != Mutant::M19_misaligned_as_aligned;
  v.shared_frame = P == Path::shifted_row;
  v.packed_rows = P == Path::packed_rows;
  if constexpr (M != Mutant::none) {  // fwd::carries_types: 16-bit rows, same-type weights
    v.same_type_weights = true;
    v.dtypes = (1u << static_cast<int>(DType::bf16)) | (1u << static_cast<int>(DType::f16));
  }
  if constexpr (P == Path::bulk_ring) v.f32_max_dim = fwd::kRingMaxDim32;
  return v;
}

inline std::string path_variant_name(Path p) { return std::string("fwd.") + fwd::path_name(p); }

}  // namespace rmsnorm::cuda
