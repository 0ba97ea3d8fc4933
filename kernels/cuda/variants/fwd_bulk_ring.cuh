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
// no producer thread, no block barrier per piece: fwd_ring_kernel below). A warp lets a piece
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

#include "async_copy.cuh"
#include "fwd_large_d.cuh"

namespace rmsnorm::cuda::fwd {

inline constexpr int kRingThreads = kSmemThreads;     // 1024: fwd.large_d's mapping and order
inline constexpr int kRingSlotChunks = kRingThreads;  // one chunk per thread per piece
inline constexpr int kRingMaxSlots = 16;
// The kernel's static shared memory at most: both rings' full and empty barriers and release
// counts, the staged weights' barrier, the row reduction's partials (double-buffered), and as
// much again in reserve (the geometry's budget is unchanged by it); the kernel asserts it, and test_launch_configs adds
// it to the ring's dynamic bytes against the block's limit.
inline constexpr std::size_t kRingStaticSmem = 2 * kRingMaxSlots * (2 * sizeof(std::uint64_t) + sizeof(unsigned)) +
                                               sizeof(std::uint64_t) + 2 * 2 * kWarp * sizeof(float);
// The declared widths on a device of 227 KB of shared memory per block (the H100 / H200): 14
// slots of a 16-bit row, 7 of fp32 (the fused add one less); can_implement decides per device.
inline constexpr std::int64_t kRingMaxDim16 = 14 * kRingSlotChunks * kChunk;
inline constexpr std::int64_t kRingMaxDim32 = 7 * kRingSlotChunks * kChunk;
inline constexpr std::int64_t kRingMaxDim32Add = kRingMaxDim32 - kRingSlotChunks * kChunk;
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
    const std::int64_t x =
        std::min<std::int64_t>(std::max<std::int64_t>(budget - w_bytes, 0) / slot_bytes, kRingMaxSlots);
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

// A ring's position: slot and completed-phase parity of a piece, stepped without divisions.
struct RingPos {
  int slot = 0;
  unsigned parity = 0;
  __device__ __forceinline__ void step(int slots) {
    if (++slot == slots) slot = 0, parity ^= 1u;
  }
  __device__ __forceinline__ RingPos plus(int k, int slots) const {  // k < slots
    RingPos q = *this;
    q.slot += k;
    if (q.slot >= slots) q.slot -= slots, q.parity ^= 1u;
    return q;
  }
};

// Piece k of the block's row iteration j of one tensor into `slot`: its full chunks, by one bulk
// copy whose bytes the slot's full barrier counts (none past the row's last full chunk: the phase
// then completes at once).
template <typename T>
__device__ __forceinline__ void ring_load(const void* base, std::int64_t stride, Chunk<T>* slots,
                                          std::uint64_t* full_bar, int slot, std::int64_t j, int k,
                                          std::int64_t full_chunks) {
  const std::int64_t row = blockIdx.x + j * gridDim.x;
  const std::int64_t first = std::int64_t{k} * kRingSlotChunks;
  const std::int64_t n = std::max<std::int64_t>(0, std::min<std::int64_t>(full_chunks - first, kRingSlotChunks));
  bulk_copy_to_shared(slots + std::int64_t{slot} * kRingSlotChunks,
                      static_cast<const T*>(base) + row * stride + first * kChunk,
                      static_cast<unsigned>(n * static_cast<std::int64_t>(sizeof(Chunk<T>))), &full_bar[slot]);
}

inline constexpr int kRingWarps = kRingThreads / kWarp;

// A warp is done with piece (j, k) of a ring of `nslots` slots, held in `slot`. Each warp adds
// one to the slot's count; the warp that brings it to a multiple of 32 is the last, and it refills
// the slot at once with the piece one ring length later, if the block has it. No producer thread
// and no block barrier: the slot is refilled as soon as the slowest warp lets it go. (The count is
// never reset: a fill's 32 releases all precede the next fill's.)
// Ordering: the count only elects the refiller (a relaxed atomic: an acquire-release one costs a
// MEMBAR.ALL.CTA per piece and warp, behind the warp's global stores). The order itself comes
// from the slot's `empty` mbarrier (kRingThreads arrivals a phase): every thread arrives on it
// with release semantics after its reads of the slot, and the elected thread waits for that phase
// (acquire), then passes a proxy fence (generic-proxy accesses, then the async proxy's write)
// before the copy engine may write the slot again. Why every thread arrives: with the count
// alone, compute-sanitizer's racecheck reports each refill against the other warps' reads
// (write-after-read) wherever a block refills a slot after the first fill (every output correct),
// and it accepts a bulk copy after an mbarrier wait only when every reading thread has arrived
// (one arrival per warp after __syncwarp, with or without proxy fences, is still reported).
// A thread that wrote the slot (the fused add's h, a partial chunk) also passes a proxy fence
// before it arrives (release_x in the kernel).
template <typename T>
__device__ __forceinline__ void ring_release(unsigned* released, std::uint64_t* empty_bar, int lane, const void* base,
                                             std::int64_t stride, Chunk<T>* slots, std::uint64_t* full_bar, int slot,
                                             std::int64_t j, int k, int pieces, int nslots, std::int64_t rows,
                                             std::int64_t full_chunks) {
  mbarrier_arrive(&empty_bar[slot]);  // every thread: its own reads of this fill
  __syncwarp();
  if (lane == 0) {
    const unsigned before = atomicAdd(&released[slot], 1u);
    if ((before & (kRingWarps - 1)) == kRingWarps - 1) {
      int kk = k + nslots;
      std::int64_t jj = j;
      while (kk >= pieces) kk -= pieces, ++jj;  // at most nslots steps
      if (jj < rows) {
        mbarrier_wait(&empty_bar[slot], (before / kRingWarps) & 1u);  // every warp's reads of this fill
        fence_proxy_async_shared();                                   // ... before the async proxy's write
        ring_load<T>(base, stride, slots, full_bar, slot, jj, kk, full_chunks);
      }
    }
  }
}

// kHeld (16-bit rows of at most kRingHeldPieces pieces): each thread keeps its chunks of h in
// registers from the first pass on (kRingHeldPieces chunks, 32 registers), so a slot is let go as
// soon as the first pass has read it and the ring runs up to a whole ring ahead of the block;
// otherwise a slot is let go after the last pass over it. The same arithmetic either way.
// kWeights (held rows, 16-bit weights, ring.weights): the row's weights are copied into shared
// memory once per block, in front of the slots, and the output pass reads them there.
template <typename T, typename G, bool kAdd, bool kHeld, bool kWeights, Mutant M>
__global__ void __launch_bounds__(kRingThreads, 1) fwd_ring_kernel(Params p, Ring ring) {
  begin_dependent_grid();
  static_assert(!kHeld || sizeof(T) == 2, "held rows: 16-bit chunks (4 registers each)");
  static_assert(!kWeights || (kHeld && sizeof(G) == 2), "staged weights: held rows, 16-bit weights (16-byte chunks)");
  constexpr bool kBarrier = M != Mutant::M18_missing_barrier;
  // Weight chunks loaded at once in the output passes (one L2 round trip for the group's pieces
  // instead of one each: the weights of a row this long do not stay in L1 beside the ring).
  // Fewer where the registers are short (they spill at the 64 registers of 1024 threads
  // otherwise): held rows two.
  constexpr int kGroup = kHeld ? 2 : (sizeof(G) == 2 ? 4 : 2);
  extern __shared__ uint4 smem_ring[];
  __shared__ std::uint64_t full_x[kRingMaxSlots];
  __shared__ std::uint64_t full_o[kAdd ? kRingMaxSlots : 1];
  __shared__ unsigned released_x[kRingMaxSlots];
  __shared__ unsigned released_o[kAdd ? kRingMaxSlots : 1];
  __shared__ std::uint64_t empty_x[kRingMaxSlots];
  __shared__ std::uint64_t empty_o[kAdd ? kRingMaxSlots : 1];
  __shared__ std::uint64_t full_w;  // the staged weights (kWeights)
  // The row reduction's partials, double-buffered by row: no block barrier separates one row's
  // reads of them from the next row's writes other than that row's own reduction.
  __shared__ float sum_partials[2][kWarp];
  static_assert(sizeof(full_x) + sizeof(full_o) + sizeof(released_x) + sizeof(released_o) + sizeof(empty_x) +
                        sizeof(empty_o) + sizeof(full_w) + sizeof(sum_partials) <=
                    kRingStaticSmem,
                "kRingStaticSmem covers the kernel's static shared memory");
  Chunk<G>* const ws = reinterpret_cast<Chunk<G>*>(smem_ring);  // kWeights: P pieces of weights
  Chunk<T>* const xs =
      reinterpret_cast<Chunk<T>*>(smem_ring + (kWeights ? std::int64_t{ring.pieces} * kRingSlotChunks : 0));
  Chunk<T>* const os = xs + std::int64_t{ring.x_slots} * kRingSlotChunks;

  const int t = static_cast<int>(threadIdx.x);
  const int lane = t & (kWarp - 1);
  const std::int64_t D = p.dim;
  const std::int64_t full = D / kChunk;
  const int n_tail = static_cast<int>(D % kChunk);
  const std::int64_t nchunks = full + (n_tail > 0 ? 1 : 0);
  const int P = ring.pieces, SX = ring.x_slots, SO = ring.o_slots;
  const std::int64_t grid = gridDim.x;
  const std::int64_t my_rows = (p.rows - blockIdx.x + grid - 1) / grid;

  // f(k) for the row's pieces k = 0, step, 2·step, ... < P: fully unrolled when held (the
  // registers are indexed by piece), a loop otherwise.
  auto for_pieces = [&](auto step, auto&& f) {
    constexpr int kStep = decltype(step)::value;
    if constexpr (kHeld) {
#pragma unroll
      for (int k = 0; k < kRingHeldPieces; k += kStep)
        if (k < P) f(k);
    } else {
      for (int k = 0; k < P; k += kStep) f(k);
    }
  };

  if (t == 0) {
    for (int i = 0; i < SX; ++i)
      mbarrier_init(&full_x[i], 1), mbarrier_init(&empty_x[i], kRingThreads), released_x[i] = 0;
    if constexpr (kAdd) {
      for (int i = 0; i < SO; ++i)
        mbarrier_init(&full_o[i], 1), mbarrier_init(&empty_o[i], kRingThreads), released_o[i] = 0;
    }
    if constexpr (kWeights) mbarrier_init(&full_w, static_cast<unsigned>(P));
    mbarrier_init_fence();
    for (int i = 0; i < SX && i / P < my_rows; ++i) ring_load<T>(p.x, p.x_stride, xs, full_x, i, i / P, i % P, full);
    if constexpr (kAdd) {
      for (int i = 0; i < SO && i / P < my_rows; ++i) ring_load<T>(p.o, p.o_stride, os, full_o, i, i / P, i % P, full);
    }
    // The staged weights, after the rows' first pieces: one copy per piece (no bytes without
    // weights: the phase then completes at once).
    if constexpr (kWeights) {
      const bool none = p.convention == static_cast<int>(Convention::no_weight);
      for (int k = 0; k < P; ++k) {
        const std::int64_t first = std::int64_t{k} * kRingSlotChunks;
        const std::int64_t n =
            none ? 0 : std::max<std::int64_t>(0, std::min<std::int64_t>(full - first, kRingSlotChunks));
        bulk_copy_to_shared(ws + first, static_cast<const G*>(p.g) + (none ? 0 : first * kChunk),
                            static_cast<unsigned>(n * static_cast<std::int64_t>(sizeof(Chunk<G>))), &full_w);
      }
    }
  }
  __syncthreads();

  RingPos xrow;                   // piece 0 of the current row in the x ring (rows not held)
  [[maybe_unused]] RingPos xpos;  // the next piece of the x ring (held rows: a slot is read once)
  RingPos opos;                   // the next piece of the o ring
  [[maybe_unused]] Chunk<T> hold[kHeld ? kRingHeldPieces : 1];
  for (std::int64_t j = 0; j < my_rows; ++j) {
    const std::int64_t row = blockIdx.x + j * grid;
    const T* xr = static_cast<const T*>(p.x) + row_off<M>(row, p.x_stride, D, sizeof(T));
    const T* orow = kAdd ? static_cast<const T*>(p.o) + row_off<M>(row, p.o_stride, D, sizeof(T)) : nullptr;
    T* xw = kAdd ? static_cast<T*>(p.x_out) + row_off<M>(row, p.x_stride, D, sizeof(T)) : nullptr;
    // Piece k's place in the x ring: when held, the pieces are read once, in order, so a running
    // position serves (and the ring may hold fewer slots than the row has pieces).
    auto x_pos = [&](int k) { return kHeld ? xpos : xrow.plus(k, SX); };
    auto x_slot = [&](int k) -> Chunk<T>& { return xs[std::int64_t{x_pos(k).slot} * kRingSlotChunks + t]; };
    // A warp is done with x's piece k: after the first pass when held, else after the last. A
    // thread that wrote its slot position (h under the fused add, the partial chunk; never when
    // held) orders that write before the copy engine's next one there (the proxy fence: generic
    // writes, then an async-proxy write); reads are ordered by the slot's empty barrier and the
    // refiller's fence (ring_release).
    auto release_x = [&](int k) {
      if (!kHeld && (kAdd || (n_tail > 0 && std::int64_t{k} * kRingSlotChunks + t == full))) fence_proxy_async_shared();
      ring_release<T>(released_x, empty_x, lane, p.x, p.x_stride, xs, full_x, x_pos(k).slot, j, k, P, SX, my_rows,
                      full);
    };

    // Pass 1: h (the fused add writes it to the residual, and to x's slot unless held), Σh²,
    // thread t's chunks in order.
    SumSquares<T, M> ss;
    for_pieces(std::integral_constant<int, 1>{}, [&](int k) {
      const std::int64_t c = std::int64_t{k} * kRingSlotChunks + t;
      const RingPos xp = x_pos(k);
      mbarrier_wait(&full_x[xp.slot], xp.parity);
      if constexpr (kAdd) mbarrier_wait(&full_o[opos.slot], opos.parity);
      Chunk<T> h = zero_chunk<T>();
      if (c < nchunks) {
        Chunk<T>& xs_c = x_slot(k);
        h = c < full ? xs_c : load_row_chunk<T, M>(xr, c, full, n_tail);
        float a[kChunk];
        unpack(h, a);
        if constexpr (kAdd) {
          const Chunk<T> oc = c < full ? os[std::int64_t{opos.slot} * kRingSlotChunks + t]
                                       : load_row_chunk<T, M>(orow, c, full, n_tail);
          float b[kChunk];
          unpack(oc, b);
#pragma unroll
          for (int e = 0; e < kChunk; ++e) a[e] = a[e] + b[e];
          h = pack<T>(a);
          store_row_chunk(xw, c, full, n_tail, h);
          unpack(h, a);
          if constexpr (!kHeld) xs_c = h;
        } else if constexpr (!kHeld) {
          if (c >= full) xs_c = h;  // the partial chunk, for the later passes
        }
#pragma unroll
        for (int e = 0; e < kChunk; ++e) ss.add(a[e]);
      }
      if constexpr (kHeld) {
        hold[k] = h;
        release_x(k);
        xpos.step(SX);
      }
      if constexpr (kAdd) {  // o is read once
        ring_release<T>(released_o, empty_o, lane, p.o, p.o_stride, os, full_o, opos.slot, j, k, P, SO, my_rows, full);
        opos.step(SO);
      }
    });
    // Σh² in block_sum's order (the same bits, so the same r as the other forms).
    const float sum = block_sum<kBarrier>(ss.acc, sum_partials[j & 1]);
    const float r = rstd_of<M>(sum, D, nchunks * kChunk, p.eps);
    if (t == 0 && p.rstd != nullptr) p.rstd[row] = r;

    // The output passes take the weights kGroup pieces at a time (zeros past the row), from
    // shared memory where staged (the partial chunk, and no weights at all, as elsewhere).
    if constexpr (kWeights) mbarrier_wait(&full_w, 0);
    auto weights_group = [&](int k0, Chunk<G>(&gw)[kGroup]) {
#pragma unroll
      for (int u = 0; u < kGroup; ++u) {
        const std::int64_t c = std::int64_t{k0 + u} * kRingSlotChunks + t;
        if constexpr (kWeights) {
          gw[u] = c < full && p.convention != static_cast<int>(Convention::no_weight)
                      ? ws[c]
                      : weight_chunk<G>(p, c, full, n_tail);
        } else {
          gw[u] = weight_chunk<G>(p, c, full, n_tail);
        }
      }
    };
    auto y_chunk = [&](int k, const Chunk<G>& gw, float(&y)[kChunk]) {
      float w[kChunk];
      weights_of(gw, p.convention, w);
      Chunk<T> hc;
      if constexpr (kHeld) {
        hc = hold[k];
      } else {
        hc = x_slot(k);
      }
#pragma unroll
      for (int e = 0; e < kChunk; ++e) y[e] = y_of<T, M>(chunk_get(hc, e), r, w[e], p.convention);
    };

    // f(k, c, weights) for each piece k of the row (c: thread t's chunk there), the weights of
    // kGroup pieces loaded at once.
    auto for_weighted = [&](auto&& f) {
      for_pieces(std::integral_constant<int, kGroup>{}, [&](int k0) {
        Chunk<G> gw[kGroup];
        weights_group(k0, gw);
#pragma unroll
        for (int u = 0; u < kGroup; ++u) {
          const int k = k0 + u;
          if (k >= P) break;
          f(k, std::int64_t{k} * kRingSlotChunks + t, gw[u]);
        }
      });
    };

    T* yr = static_cast<T*>(p.y) + row_off<M>(row, p.y_stride, D, sizeof(T));
    for_weighted([&](int k, std::int64_t c, const Chunk<G>& gw) {
      if (c < nchunks) {
        float y[kChunk];
        y_chunk(k, gw, y);
        store_row_chunk(yr, c, full, n_tail, pack<T>(y));
      }
      if constexpr (!kHeld) release_x(k);
    });
    if constexpr (!kHeld) {
      xrow = xrow.plus(P % SX, SX);    // P <= SX: at most one wrap...
      if (P == SX) xrow.parity ^= 1u;  // ...and P == SX lands on the same slot one fill later
    }
  }
}

// fwd.bulk_ring: one 1024-thread block per SM on a persistent grid, each
// streaming its rows into a ring of shared-memory slots by bulk copies.
struct fwd_bulk_ring {
  static constexpr const char* kName = "fwd.bulk_ring";
  static constexpr const char* kAlias = nullptr;
  static constexpr int kRank = 500;
  static constexpr const char* kDescription =
      "aligned rows, a whole row in shared memory (16-bit D <= 114688 and fp32 <= 57344 on a 227 KB device; the fused "
      "add one slot less): forward and fused add (no FP8 outputs): fwd.large_d's mapping and bits, each block's rows "
      "streamed into a ring of shared-memory slots by bulk copies (Hopper), 16-bit rows of up to 8 slots held in "
      "registers from the first pass (their 16-bit weights, in the plain forward, staged in shared memory)";
  static constexpr std::uint32_t kOps = kPlainOps;
  static constexpr bool kQuantPath = false;
  static constexpr std::int64_t kDimMin = 1, kDimMax = kRingMaxDim16, kF32DimMax = kRingMaxDim32;
  static constexpr std::int64_t kF32AddDimMax = kRingMaxDim32Add;
  static constexpr RowLayout kLayout = RowLayout::aligned;
  using Mutants = MutantList<Mutant::M1_padded_divisor, Mutant::M3_low_precision_sum, Mutant::M9_tail_overread,
                             Mutant::M18_missing_barrier, Mutant::M19_misaligned_as_aligned>;

  static AccumShape shape(std::int64_t dim) {
    // fwd.large_d's mapping and order (only the row's way into shared memory differs).
    return chunked_block_shape(dim, kRingThreads);
  }

  template <Mutant M>
  static Status refuse(const ForwardArgs& a, const std::string& who) {
    const std::int64_t D = a.dim;
    if (a.quant != Quant::none)
      return Status::fail(Status::Code::unsupported, who + ": no FP8 outputs (fwd.large_d runs them)");
    const Status c = bulk_copy_status();
    if (!c.ok()) return Status::fail(c.code, who + ": " + c.reason);
    const bool add = a.o.data != nullptr;
    if (bulk_ring_smem(D, kChunk * static_cast<std::int64_t>(size_of(a.x.type)), add, smem_cache_budget(1))
            .ring.pieces == 0)
      return Status::fail(Status::Code::unsupported,
                          who + ": a row of D = " + std::to_string(D) + " (" + to_string(a.x.type) +
                              (add ? ", fused add" : "") +
                              ") takes more 1024-chunk slots than this device's shared memory holds" +
                              (add ? " beside one slot of o" : ""));
    return Status::success();
  }

  template <Mutant M>
  static Status run(const ForwardArgs& a) {
    return run_variant<M, fwd_bulk_ring>(
        a, [&](auto tt, auto gt, auto q, auto ad, const Params& p, cudaStream_t s, Status& result) {
          using T = typename decltype(tt)::type;
          using G = typename decltype(gt)::type;
          constexpr bool kQ = decltype(q)::value, kA = decltype(ad)::value;
          if constexpr (kQ) {  // can_implement declines FP8 outputs
            result = Status::fail(Status::Code::unsupported, "fwd.bulk_ring: no FP8 outputs");
          } else {
            // The plain forward of held rows (16-bit) with 16-bit weights asks for the
            // weights staged (H200, bf16, D = 40960-65536, R = 4096-32768: 0.75-0.81 of the copy staged,
            // 0.66-0.77 not). The fused add does not: beside the weights its x and o rings get 3 slots each
            // at D = 65536 (11 and 3 without), and it runs 0.87 staged against 0.88-0.90.
            constexpr bool kHeldForm = sizeof(T) == 2;
            constexpr std::int64_t kStageW =
                kHeldForm && !kA && sizeof(G) == 2 ? static_cast<std::int64_t>(sizeof(Chunk<G>)) : 0;
            const RingSmem m =
                bulk_ring_smem(a.dim, static_cast<std::int64_t>(sizeof(Chunk<T>)), kA, smem_cache_budget(1), kStageW);
            auto kernel = fwd_ring_kernel<T, G, kA, false, false, M>;
            if constexpr (kHeldForm) {
              if (m.ring.pieces <= kRingHeldPieces) kernel = fwd_ring_kernel<T, G, kA, true, false, M>;
              if constexpr (kStageW > 0) {
                if (m.ring.weights) kernel = fwd_ring_kernel<T, G, kA, true, true, M>;
              }
            }
            cudaError_t e =
                cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(m.bytes));
            std::int64_t grid = 0;
            if (e == cudaSuccess) e = persistent_grid(kernel, kRingThreads, m.bytes, a.rows, grid);
            if (e != cudaSuccess) {
              result = Status::fail(Status::Code::launch_failed,
                                    std::string("fwd.bulk_ring: launch shape: ") + cudaGetErrorString(e));
              return;
            }
            launch_kernel(kernel, grid_for(grid), kRingThreads, m.bytes, s, p, m.ring);
          }
        });
  }
};

}  // namespace rmsnorm::cuda::fwd
