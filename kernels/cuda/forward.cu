// Registration of the CUDA forward family (forward, fused add, fused FP8, both fusions), best
// first: the dispatcher takes the first product variant whose can_implement() accepts and whose
// dispatch rules (kernels/common/dispatch_table.cpp) take the arguments.
//   fwd.warp_row       D ≤ 1024: a sub-warp (1–32 lanes) per row, row in registers
//   fwd.staged_rows    FP8 outputs, 4096 < D ≤ 8192: fwd.block_row's kernel with a persistent grid
//                      and the next rows of each block staged in shared memory (cp.async); the
//                      same bits
//   fwd.block_row      D ≤ 16384: a block of ≤ 512 threads per row, row in registers (FP8 outputs
//                      of 16-bit rows past 8192 in the lean-y kernel, y not held)
//   fwd.cluster_row    aligned, D ≤ 65536: a row over an 8-CTA cluster (Hopper), slices in
//                      registers (forward_cluster.cuh)
//   fwd.bulk_ring      aligned, a whole row in shared memory (forward_ring.cuh): fwd.large_d's
//                      mapping and bits (but the dynamic FP8 scale where fwd.large_d fuses its
//                      amax), each block's rows streamed into a ring of slots by bulk copies
//   fwd.large_d_pair   D ≤ 2^24: fwd.large_d's kernel with 512-thread blocks, two per SM (one
//                      row's loads overlap the other's FP8 scale and stores)
//   fwd.large_d        D ≤ 2^24: a 1024-thread block per row, row cached in shared memory
//   fwd.shifted_row    D ≤ 8192, rows of any alignment whose tensors share one 16-byte frame,
//                      forward and fused add: the row in registers, 16-byte vectors where it lies,
//                      the weights in shared memory at the block's lead (forward_shifted.cuh)
//   fwd.packed_rows    D ≤ 8192, packed rows of any alignment: tiles of consecutive rows through
//                      shared-memory stages as 16-byte vectors (forward_packed.cuh)
//   fwd.realigned_row  fwd.element_row's kernel, the row moved between global and shared memory
//                      in 16-byte vectors (elements only before the row's first 16-byte boundary
//                      and after its last); the same bits
//   fwd.element_row    D ≤ 8192, any alignment: a block per row, row in registers, coalesced
//                      element-wise accesses (odd D, misaligned or odd-strided rows)
//   fwd.scalar         D ≤ 2^24, any alignment: element-wise, two passes over global memory
#include <vector>

#include "forward_variant.h"
#include "registration.h"

namespace rmsnorm::cuda {

void register_forward_variants(std::vector<Variant>& out) {
  out.push_back(make<Mutant::none, Path::warp_row>(
      "fwd.warp_row", "D <= 1024: a sub-warp of 1-32 lanes per row, row in registers, 16-byte loads"));
  out.push_back(make<Mutant::none, Path::staged_rows>(
      "fwd.staged_rows", "FP8 outputs, 4096 < D <= 8192: fwd.block_row on a persistent grid, the next rows staged in shared memory (cp.async)"));
  out.push_back(make<Mutant::none, Path::block_row>(
      "fwd.block_row", "D <= 16384 (FP8 outputs: 16-bit rows to 16384, fp32 to 8192): a block per row, row in registers, 16-byte loads"));
  out.push_back(make<Mutant::none, Path::cluster_row>(
      "fwd.cluster_row", "aligned, D <= 65536: one row over an 8-CTA thread-block cluster, slices in registers, the next row in flight, the row sum (and the dynamic FP8 amax) through distributed shared memory"));
  out.push_back(make<Mutant::none, Path::bulk_ring>(
      "fwd.bulk_ring", "aligned rows, a whole row in shared memory (16-bit D <= 114688 and fp32 <= 57344 on a 227 KB device; the fused add one slot less): forward and fused add (no FP8 outputs): fwd.large_d's mapping and bits, each block's rows streamed into a ring of shared-memory slots by bulk copies (Hopper), 16-bit rows of up to 8 slots held in registers from the first pass (their 16-bit weights, in the plain forward, staged in shared memory)"));
  out.push_back(make<Mutant::none, Path::large_d_pair>(
      "fwd.large_d_pair", "D <= 2^24: fwd.large_d with 512-thread blocks, two per SM, each caching its row in half the SM's shared memory"));
  out.push_back(make<Mutant::none, Path::large_d>(
      "fwd.large_d", "D <= 2^24: a 1024-thread block per row, row cached in shared memory (re-read beyond it)"));
  out.push_back(make<Mutant::none, Path::shifted_row>(
      "fwd.shifted_row", "D <= 8192, rows of any alignment whose tensors share one 16-byte frame, forward and fused add: a group of whole warps per row, the row in registers, 16-byte vectors where the row lies (element accesses at its two ends only), the weights in shared memory at the block's lead, the row sum over column chunks whatever the lead"));
  out.push_back(make<Mutant::none, Path::packed_rows>(
      "fwd.packed_rows", "D <= 8192, packed rows (stride = D) of any alignment, every forward op (FP8 outputs: static, per token, per block of 128): tiles of consecutive rows copied as 16-byte vectors into shared-memory stages (cp.async), outputs stored element by element"));
  out.push_back(make<Mutant::none, Path::realigned_row>(
      "fwd.realigned_row", "D <= 8192, any alignment: fwd.element_row with the row moved through shared memory in 16-byte vectors"));
  out.push_back(make<Mutant::none, Path::element_row>(
      "fwd.element_row", "D <= 8192, any alignment: a block per row, row in registers, coalesced element-wise accesses"));
  out.push_back(make<Mutant::none, Path::scalar>(
      "fwd.scalar", "any alignment, D <= 2^24: element-wise loads, two passes"));
}

}  // namespace rmsnorm::cuda
