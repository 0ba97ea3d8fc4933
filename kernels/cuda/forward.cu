// Registration of the CUDA forward family (forward, fused add, fused FP8, both fusions), best
// first: the dispatcher takes the first product variant whose can_implement() accepts.
//   fwd.warp_row     D ≤ 1024: a sub-warp (1–32 lanes) per row, row in registers
//   fwd.block_row    D ≤ 16384: a block of ≤ 512 threads per row, row in registers (FP8
//                    outputs: 256-thread blocks to D = 8192; 16-bit rows past it in the lean-y
//                    kernel, y not held, from R = 1024: block_row_preferred)
//   fwd.staged_rows  FP8 outputs, 4096 < D ≤ 8192: fwd.block_row's kernel with a persistent
//                    grid and the next rows of each block staged in shared memory (cp.async);
//                    the same bits; dispatched before block_row for 16-bit rows of 7168 < D at
//                    512 <= R < 2048 (staged_rows_preferred)
//   fwd.bulk_ring    aligned, a whole row in shared memory (forward_ring.cuh): fwd.large_d's
//                    mapping and bits (but the dynamic FP8 scale where fwd.large_d fuses its
//                    amax), each block's rows streamed into a ring of slots by bulk
//                    copies (Hopper); 16-bit rows of 40960 < D without FP8 outputs: the fused
//                    add to D = 65536 from R = 512, the plain forward with 16-bit weights to
//                    D = 57344 from R = 4096 (bulk_ring_preferred)
//   fwd.large_d_pair D ≤ 2^24: fwd.large_d's kernel with 512-thread blocks, two per SM (one
//                    row's loads overlap the other's FP8 scale and stores); FP8 outputs of rows
//                    to 64 KB, R ≥ 256 (16-bit rows to 128 KB from R = 512, 80 KB under the
//                    fused add), the 16-bit fused add of 16384 < D ≤ 32768 from
//                    R = 512, and the plain 16-bit forward to D = 49152 at 256 ≤ R ≤ 512
//                    (large_d_pair_preferred)
//   fwd.cluster_row  aligned, D ≤ 65536: a row over an 8-CTA cluster (Hopper), slices in
//                    registers (forward_cluster.cuh); the plain forward and fused add of 16-bit
//                    rows past 16384 at R ≤ 64, the fused add at R = 64 to D = 32768, their
//                    FP8 forms from D = 16384 at R ≤ 16 (cluster_row_preferred)
//   fwd.large_d      D ≤ 2^24: a 1024-thread block per row, row cached in shared memory
//   fwd.element_row  D ≤ 8192, any alignment: a block per row, row in registers, coalesced
//                    element-wise accesses (odd D, misaligned or odd-strided rows)
//   fwd.realigned_row  fwd.element_row's kernel, the row moved between global and shared memory
//                    in 16-byte vectors (elements only before the row's first 16-byte boundary
//                    and after its last); the same bits; dispatched before fwd.element_row for
//                    16-bit rows from R = 8192 (realigned_preferred): FP8 outputs and strided
//                    rows, since packed rows go to fwd.packed_rows before it
//   fwd.packed_rows  D ≤ 8192, packed rows of any alignment, forward and fused add: tiles of
//                    consecutive rows through shared-memory stages as 16-byte vectors
//                    (forward_packed.cuh); the forward from R = 8192 (fp32 to D = 4097), the
//                    fused add from R = 4096 (16-bit: from 512 at D ≥ 4097; fp32 from D = 4097)
//                    (packed_fwd_preferred)
//   fwd.shifted_row  D ≤ 8192, rows of any alignment whose tensors share one 16-byte frame,
//                    forward and fused add: the row in registers, 16-byte vectors where it lies,
//                    the weights in shared memory at the block's lead (forward_shifted.cuh);
//                    the plain forward of 16-bit rows, D = 1025-4097 from R = 4096, wider from
//                    R = 16384 (shifted_preferred)
//   fwd.scalar       D ≤ 2^24, any alignment: element-wise, two passes over global memory
#include <string>
#include <utility>
#include <vector>

#include "forward_instances.h"
#include "registration.h"

namespace rmsnorm::cuda {
namespace {

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
  v.ops = fwd::ops_mask<M>();
  if constexpr (P == Path::staged_rows)  // FP8 outputs only (can_implement says why)
    v.ops = (1u << static_cast<int>(Op::forward_quant)) | (1u << static_cast<int>(Op::add_forward_quant));
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
  v.aligned_rows = P == Path::warp_row || P == Path::block_row || P == Path::staged_rows || P == Path::large_d ||
                   P == Path::large_d_pair || P == Path::cluster_row || P == Path::bulk_ring;
  if constexpr (P == Path::bulk_ring) v.f32_max_dim = fwd::kRingMaxDim32;
  return v;
}

const char* path_variant_name(Path p) {
  switch (p) {
    case Path::warp_row: return "fwd.warp_row";
    case Path::block_row: return "fwd.block_row";
    case Path::staged_rows: return "fwd.staged_rows";
    case Path::large_d: return "fwd.large_d";
    case Path::large_d_pair: return "fwd.large_d_pair";
    case Path::element_row: return "fwd.element_row";
    case Path::realigned_row: return "fwd.realigned_row";
    case Path::packed_rows: return "fwd.packed_rows";
    case Path::cluster_row: return "fwd.cluster_row";
    case Path::bulk_ring: return "fwd.bulk_ring";
    case Path::shifted_row: return "fwd.shifted_row";
    default: return "fwd.scalar";
  }
}

template <Mutant M, Path P>
void add_mutant(std::vector<Variant>& out) {
  out.push_back(make<M, P>(std::string("mutant.") + path_variant_name(P) + "." + to_string(M),
                           std::string(path_variant_name(P)) + " with " + mutant_description(M)));
}

}  // namespace

void register_forward_variants(std::vector<Variant>& out) {
  out.push_back(make<Mutant::none, Path::warp_row>(
      "fwd.warp_row", "D <= 1024: a sub-warp of 1-32 lanes per row, row in registers, 16-byte loads"));
  // Before fwd.block_row (the same bits) where it measures faster: FP8 outputs of 16-bit rows,
  // 7168 < D <= 8192, 512 <= R < 2048 (fwd::staged_rows_preferred).
  out.push_back(make<Mutant::none, Path::staged_rows>(
      "fwd.staged_rows", "FP8 outputs, 4096 < D <= 8192: fwd.block_row on a persistent grid, the next rows staged in shared memory (cp.async); dispatched for 16-bit rows of 7168 < D at 512 <= R < 2048"));
  out.back().preferred_forward = fwd::staged_rows_preferred;
  // FP8 outputs of 16-bit rows past 8192 (the lean-y kernel) only from R = 1024
  // (fwd::block_row_preferred); elsewhere wherever it implements.
  out.push_back(make<Mutant::none, Path::block_row>(
      "fwd.block_row", "D <= 16384 (FP8 outputs: 16-bit rows to 16384, from R = 1024 past 8192; fp32 to 8192): a block per row, row in registers, 16-byte loads"));
  out.back().preferred_forward = fwd::block_row_preferred;
  // Before the large-D paths for the plain forward and fused add of 16-bit rows past 16384 at
  // R <= 64 (fwd::cluster_row_preferred).
  out.push_back(make<Mutant::none, Path::cluster_row>(
      "fwd.cluster_row", "aligned, D <= 65536: one row over an 8-CTA thread-block cluster, slices in registers, the next row in flight, the row sum (and the dynamic FP8 amax) through distributed shared memory; dispatched for the forward and fused add of 16-bit rows past 16384 at R <= 64 (the fused add at R = 64 to D = 32768), and for their FP8 forms from D = 16384 at R <= 16"));
  out.back().preferred_forward = fwd::cluster_row_preferred;
  // Before the large-D paths for 16-bit rows of 40960 < D without FP8 outputs: the fused add to
  // D = 65536 from R = 512, the plain forward with 16-bit weights to D = 57344 from R = 4096
  // (fwd::bulk_ring_preferred).
  out.push_back(make<Mutant::none, Path::bulk_ring>(
      "fwd.bulk_ring", "aligned rows, a whole row in shared memory (16-bit D <= 114688 and fp32 <= 57344 on a 227 KB device; the fused add one slot less): fwd.large_d's mapping and bits (but the dynamic per-token FP8 scale where fwd.large_d fuses its amax), each block's rows streamed into a ring of shared-memory slots by bulk copies (Hopper), 16-bit rows of up to 8 slots without FP8 outputs held in registers from the first pass (their 16-bit weights, in the plain forward, staged in shared memory); dispatched for 16-bit rows of 40960 < D without FP8 outputs: the fused add to D = 65536 from R = 512, the plain forward with 16-bit weights to D = 57344 from R = 4096"));
  out.back().preferred_forward = fwd::bulk_ring_preferred;
  // Before fwd.large_d for FP8 outputs of rows to 64 KB from R = 256 (fp32 add + FP8 over 32 KB:
  // below R = 4096) and of 16-bit rows past 64 KB from R = 512 (to 128 KB; 80 KB under the fused
  // add), the 16-bit fused add of 16384 < D <= 32768 from R = 512, and the plain 16-bit
  // forward to D = 49152 at 256 <= R <= 512 (fwd::large_d_pair_preferred).
  out.push_back(make<Mutant::none, Path::large_d_pair>(
      "fwd.large_d_pair", "D <= 2^24: fwd.large_d with 512-thread blocks, two per SM, each caching its row in half the SM's shared memory; dispatched for FP8 outputs of rows to 64 KB from R = 256 and of 16-bit rows past it from R = 512 to 128 KB (80 KB under the fused add) (16-bit rows to D = 16384 from R = 1024 go to fwd.block_row before it), the 16-bit fused add of 16384 < D <= 32768 from R = 512, and the plain 16-bit forward to D = 49152 at 256 <= R <= 512"));
  out.back().preferred_forward = fwd::large_d_pair_preferred;
  out.push_back(make<Mutant::none, Path::large_d>(
      "fwd.large_d", "D <= 2^24: a 1024-thread block per row, row cached in shared memory (re-read beyond it)"));
  // Before fwd.packed_rows and fwd.realigned_row where it measures faster: the plain forward
  // of 16-bit rows, D = 1025-4097 from R = 4096, wider from R = 16384 (fwd::shifted_preferred).
  out.push_back(make<Mutant::none, Path::shifted_row>(
      "fwd.shifted_row", "D <= 8192, rows of any alignment whose tensors share one 16-byte frame, forward and fused add: a group of whole warps per row, the row in registers, 16-byte vectors where the row lies (element accesses at its two ends only), the weights in shared memory at the block's lead, the row sum over column chunks whatever the lead; dispatched for the plain forward of 16-bit rows of D = 1025-4097 from R = 4096 and of wider rows from R = 16384"));
  out.back().preferred_forward = fwd::shifted_preferred;
  out.back().ops = (1u << static_cast<int>(Op::forward)) | (1u << static_cast<int>(Op::add_forward));
  // Before fwd.realigned_row where it measures faster: the forward of packed rows from
  // R = 8192 (fp32 to D = 4097), the fused add from R = 4096 (16-bit: from 512 at D >= 4097; fp32
  // from D = 4097), the fused add + FP8 from R = 4096 (from 1024 at D >= 1025; fp32 from D = 4097
  // and R = 1024), the FP8 forward per block of 16-bit rows from R = 4096 (fwd::packed_fwd_preferred).
  out.push_back(make<Mutant::none, Path::packed_rows>(
      "fwd.packed_rows", "D <= 8192, packed rows (stride = D) of any alignment, every forward op (FP8 outputs: static, per token, per block of 128): tiles of consecutive rows copied as 16-byte vectors into shared-memory stages (cp.async), outputs stored element by element; dispatched for the forward from R = 8192 (fp32 to D = 4097) and the fused add from R = 4096 (16-bit from 512 at D >= 4097; fp32 from D = 4097), for the fused add + FP8 from R = 4096 (from R = 1024 at D >= 1025; fp32 from D = 4097 and R = 1024), and for the FP8 forward per block of 16-bit rows from R = 4096"));
  out.back().preferred_forward = fwd::packed_fwd_preferred;
  out.back().packed_rows = true;
  // Before fwd.element_row (the same bits) where it measures faster: 16-bit rows, R >= 8192
  // (fwd::realigned_preferred).
  out.push_back(make<Mutant::none, Path::realigned_row>(
      "fwd.realigned_row", "D <= 8192, any alignment: fwd.element_row with the row moved through shared memory in 16-byte vectors; dispatched for 16-bit rows from R = 8192"));
  out.back().preferred_forward = fwd::realigned_preferred;
  out.push_back(make<Mutant::none, Path::element_row>(
      "fwd.element_row", "D <= 8192, any alignment: a block per row, row in registers, coalesced element-wise accesses"));
  out.push_back(make<Mutant::none, Path::scalar>(
      "fwd.scalar", "any alignment, D <= 2^24: element-wise loads, two passes"));

#define RMSNORM_FWD_PATH_run_block_row Path::block_row
#define RMSNORM_FWD_PATH_run_large_d Path::large_d
#define RMSNORM_FWD_PATH_run_warp_row Path::warp_row
#define RMSNORM_FWD_REGISTER_MUTANT(fn, m) add_mutant<Mutant::m, RMSNORM_FWD_PATH_##fn>(out);
  RMSNORM_FWD_MUTANT_INSTANCES_A(RMSNORM_FWD_REGISTER_MUTANT)
  RMSNORM_FWD_MUTANT_INSTANCES_B(RMSNORM_FWD_REGISTER_MUTANT)
#undef RMSNORM_FWD_REGISTER_MUTANT
}

}  // namespace rmsnorm::cuda
