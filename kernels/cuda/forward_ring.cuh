// fwd.bulk_ring: the plain forward and the fused add (no FP8 outputs: fwd.large_d runs them) for
// long aligned rows, each block's rows streamed into a ring of shared-memory slots by bulk copies (sm_90, the
// TMA engine; a variant of its own).
//
// Why. fwd.large_d caches a row of D = 65536 (128 KB of bf16) in one 1024-thread block's shared
// memory, one block per SM, and loads it through the threads' registers: 64 KB in flight at most,
// none while the block reduces, scales and stores (it asks L2 for the head of its next row then).
// H200: 0.71-0.83 of the copy at D = 65536. Here the copy engine brings the next
// pieces of the block's rows as soon as their slots are free, so the SM's loads keep flowing
// through the reduction and the stores, and no thread holds a load in flight.
//
// Layout. A piece is 1024 chunks of 8 elements (16 KB of a 16-bit row, 32 KB of fp32): thread t
// owns chunk t of every piece, that is chunks t, t + 1024, ... of the row, in that order, the
// mapping and order of fwd.large_d, so both give the same bits. A row takes P pieces; the block's
// rows are row0 = blockIdx.x, row0 + gridDim.x, ... (a persistent grid, one block per SM), and
// their pieces, in order, are the sequence s = j·P + k (row j of the block, piece k). Piece s goes
// to slot s mod S of the x ring (S ≥ P: a whole row is in shared memory at once, since r needs all
// of it before the first output; not so where the row is held in registers, below), and its
// mbarrier completes phase s div S when the bytes land.
// A slot is refilled with piece s + S by the last warp to let piece s go (a shared count per slot;
// no producer thread, no block barrier per piece: forward_ring_kernel.cuh). A warp lets a piece
// go after its first pass where the row is held in registers (16-bit rows of up to 8 pieces:
// the ring then runs up to S pieces ahead of the block), else after its last
// pass (S - P pieces ahead while a row is reduced and stored). The fused add streams o through a
// ring of its own (o is dead once h = RN(x + o) is formed), released piece by piece in the first
// pass. The plain forward of held rows with 16-bit weights keeps the row's weights in shared
// memory, copied once per block, and the ring takes what is left (kRingStagedMinSlots below).
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
// The kernel's static shared memory at most: both rings' full and empty barriers and release
// counts, the staged weights' barrier, the row reduction's partials (double-buffered), and as
// much again in reserve (the geometry's budget is unchanged by it); the kernel asserts it, and test_launch_configs adds it to the ring's dynamic
// bytes against the block's limit.
inline constexpr std::size_t kRingStaticSmem = 2 * kRingMaxSlots * (2 * sizeof(std::uint64_t) + sizeof(unsigned)) +
                                               sizeof(std::uint64_t) + 2 * 2 * kWarp * sizeof(float);
// The declared widths on a device of 227 KB of shared memory per block (the H100 / H200): 14
// slots of a 16-bit row, 7 of fp32 (the fused add one less); can_implement decides per device.
inline constexpr std::int64_t kRingMaxDim16 = 14 * kRingSlotChunks * kChunk;
inline constexpr std::int64_t kRingMaxDim32 = 7 * kRingSlotChunks * kChunk;
// Held rows: 16-bit rows of at most this many pieces are kept in registers
// from the first pass on (8 chunks a thread, 32 registers), so a slot is let go once read.
inline constexpr int kRingHeldPieces = 8;
// Staged weights: in the plain forward, where the row is held and the weights are 16-bit, the
// weights of the whole row are copied into shared memory once per block (P slots' worth), and the
// x ring takes what is left, at least kRingStagedMinSlots slots. (The fused add is not staged: its
// x and o rings beside the weights run slower.) A held row needs no whole row in the ring (its
// slots are let go after the first pass), so the ring may hold fewer slots than the row has
// pieces there. Why: without them the output pass of the ring's forward waits on an L2 round trip
// per group of weights (H200: 34 % of the stall samples at bf16 8192 x 65536): a 128 KB row's
// weights do not stay in L1 beside the ring.
inline constexpr int kRingStagedMinSlots = 2;

// The ring's geometry for a row of `dim` elements (chunk_bytes a chunk), a pure function, so
// test_launch_configs checks it for every D without a GPU. slots = what the budget holds (at most
// kRingMaxSlots); the fused add gives o about half of what the row leaves over (at least one).
// pieces == 0: the row does not fit (fewer slots than pieces, the fused add's o slot included).
// weight_chunk_bytes > 0 asks for staged weights (the caller runs the held plain forward with
// 16-bit weights): taken without the fused add where the row is held (pieces <= kRingHeldPieces)
// and the x ring left beside the weights has kRingStagedMinSlots slots.
struct Ring {
  int pieces = 0;   // P: pieces (slots) per row
  int x_slots = 0;  // S: the x ring
  int o_slots = 0;  // the o ring (fused add), else 0
  int weights = 0;  // 1: the weights staged in shared memory (in front of the slots)
};
struct RingSmem {
  Ring ring;
  std::size_t bytes = 0;  // dynamic shared memory: the staged weights, the x slots, then the o slots
};
inline RingSmem bulk_ring_smem(std::int64_t dim, std::int64_t chunk_bytes, bool add, std::int64_t budget,
                               std::int64_t weight_chunk_bytes = 0) {
  RingSmem m;
  const std::int64_t slot_bytes = std::int64_t{kRingSlotChunks} * chunk_bytes;
  const std::int64_t chunks = (dim + kChunk - 1) / kChunk;
  const std::int64_t pieces = (chunks + kRingSlotChunks - 1) / kRingSlotChunks;
  if (dim < 1) return m;
  if (weight_chunk_bytes > 0 && !add && pieces <= kRingHeldPieces) {
    const std::int64_t w_bytes = pieces * kRingSlotChunks * weight_chunk_bytes;
    const std::int64_t x = std::min<std::int64_t>(std::max<std::int64_t>(budget - w_bytes, 0) / slot_bytes, kRingMaxSlots);
    if (x >= kRingStagedMinSlots) {
      m.ring = {static_cast<int>(pieces), static_cast<int>(x), 0, 1};
      m.bytes = static_cast<std::size_t>(w_bytes + x * slot_bytes);
      return m;
    }
  }
  const std::int64_t slots = std::min<std::int64_t>(budget / slot_bytes, kRingMaxSlots);
  const std::int64_t o = add ? std::max<std::int64_t>(1, (slots - pieces + 1) / 2) : 0;
  if (pieces + o > slots) return m;
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
