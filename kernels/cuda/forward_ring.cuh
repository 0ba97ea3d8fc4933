// fwd.bulk_ring: the forward family (forward, fused add, FP8 outputs, both fusions) for long aligned
// rows, each block's rows streamed into a ring of shared-memory slots by bulk copies (sm_90, the
// TMA engine; a variant of its own).
//
// Why. fwd.large_d caches a row of D = 65536 (128 KB of bf16) in one 1024-thread block's shared
// memory, one block per SM, and loads it through the threads' registers: 64 KB in flight at most,
// none while the block reduces, scales and stores (it asks L2 for the head of its next row then).
// H200: 0.71-0.83 of the copy at D = 65536, sessions 2-14. Here the copy engine brings the next
// pieces of the block's rows as soon as their slots are free, so the SM's loads keep flowing
// through the reduction and the stores, and no thread holds a load in flight.
//
// Layout. A piece is 1024 chunks of 8 elements (16 KB of a 16-bit row, 32 KB of fp32): thread t
// owns chunk t of every piece, that is chunks t, t + 1024, ... of the row, in that order, the
// mapping and order of fwd.large_d, so both give the same bits. A row takes P pieces; the block's
// rows are row0 = blockIdx.x, row0 + gridDim.x, ... (a persistent grid, one block per SM), and
// their pieces, in order, are the sequence s = j·P + k (row j of the block, piece k). Piece s goes
// to slot s mod S of the x ring (S ≥ P: a whole row is in shared memory at once, since r needs all
// of it before the first output), and its mbarrier completes phase s div S when the bytes land.
// A slot is refilled with piece s + S by the last warp to let piece s go (a shared count per slot;
// no producer thread, no block barrier per piece: forward_ring_kernel.cuh). A warp lets a piece
// go after its first pass where the row is held in registers (16-bit rows of up to 8 pieces
// without FP8 outputs: the ring then runs up to S pieces ahead of the block), else after its last
// pass (S - P pieces ahead while a row is reduced and stored). The fused add streams o through a
// ring of its own (o is dead once h = RN(x + o) is formed), released piece by piece in the first
// pass. H200, session 15: the fused add at D = 65536 0.84-0.91 of the copy (1.03-1.11x the
// large-D paths, dispatched there); the plain forward 0.70-0.74 (fwd.large_d 0.80-0.83: not
// taken); the record of the four forms measured is notes/PERF.md, session 15.
//
// Bulk copies move whole 16-byte units: a piece's copy takes its full chunks, and a row's partial
// last chunk (D mod 8 ≠ 0) is read by its thread from global memory in the first pass (and, when
// the row is not held, parked in its slot position for the later passes: the copy never writes
// that position).
#pragma once

#include <algorithm>
#include <cstdint>

#include "forward_kernels.cuh"

namespace rmsnorm::cuda::fwd {

inline constexpr int kRingThreads = kSmemThreads;      // 1024: fwd.large_d's mapping and order
inline constexpr int kRingSlotChunks = kRingThreads;    // one chunk per thread per piece
inline constexpr int kRingMaxSlots = 16;
// The kernel's static shared memory at most: both rings' full barriers and release counts, the
// row reductions' partials (sums and maxima, double-buffered); the kernel asserts it, and
// test_launch_configs adds it to the ring's dynamic bytes against the block's limit.
inline constexpr std::size_t kRingStaticSmem =
    2 * kRingMaxSlots * (sizeof(std::uint64_t) + sizeof(unsigned)) + 2 * 2 * kWarp * sizeof(float);
// The declared widths on a device of 227 KB of shared memory per block (the H100 / H200): 14
// slots of a 16-bit row, 7 of fp32 (the fused add one less); can_implement decides per device.
inline constexpr std::int64_t kRingMaxDim16 = 14 * kRingSlotChunks * kChunk;
inline constexpr std::int64_t kRingMaxDim32 = 7 * kRingSlotChunks * kChunk;

// The ring's geometry for a row of `dim` elements (chunk_bytes a chunk), a pure function, so
// test_launch_configs checks it for every D without a GPU. slots = what the budget holds (at most
// kRingMaxSlots); the fused add gives o about half of what the row leaves over (at least one).
// pieces == 0: the row does not fit (fewer slots than pieces, the fused add's o slot included).
struct Ring {
  int pieces = 0;   // P: pieces (slots) per row
  int x_slots = 0;  // S: the x ring
  int o_slots = 0;  // the o ring (fused add), else 0
};
struct RingSmem {
  Ring ring;
  std::size_t bytes = 0;  // dynamic shared memory: the x slots, then the o slots
};
inline RingSmem bulk_ring_smem(std::int64_t dim, std::int64_t chunk_bytes, bool add, std::int64_t budget) {
  RingSmem m;
  const std::int64_t slot_bytes = std::int64_t{kRingSlotChunks} * chunk_bytes;
  const std::int64_t slots = std::min<std::int64_t>(budget / slot_bytes, kRingMaxSlots);
  const std::int64_t chunks = (dim + kChunk - 1) / kChunk;
  const std::int64_t pieces = (chunks + kRingSlotChunks - 1) / kRingSlotChunks;
  const std::int64_t o = add ? std::max<std::int64_t>(1, (slots - pieces + 1) / 2) : 0;
  if (dim < 1 || pieces + o > slots) return m;
  m.ring.pieces = static_cast<int>(pieces);
  m.ring.o_slots = static_cast<int>(o);
  m.ring.x_slots = static_cast<int>(slots - o);
  m.bytes = static_cast<std::size_t>(slots * slot_bytes);
  return m;
}

// Bulk copies and mbarrier transaction counts need sm_90.
inline Status bulk_copy_status() {
  static int cached[kFeatureCacheDevices] = {};
  return device_feature_status(cached, cudaDevAttrComputeCapabilityMajor, 9, "copy to",
                               "no bulk copies (cp.async.bulk) on this device (sm_90+)");
}

}  // namespace rmsnorm::cuda::fwd
