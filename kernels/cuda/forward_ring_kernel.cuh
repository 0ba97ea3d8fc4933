// fwd.bulk_ring's kernel (forward_ring.cuh has its design and geometry). Included only by its
// instantiation unit, forward_bulk_ring.cu, so a change here rebuilds that unit alone.
#pragma once

#include "async_copy.cuh"
#include "forward_ring.cuh"

namespace rmsnorm::cuda::fwd {

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

// One tensor's producer state (thread 0's, in shared memory): the next piece of the block's
// sequence to hand to the copy engine, its row, its piece in the row, its slot, and the phase
// parity of the slot's "empty" barrier that must have completed before the slot is refilled.
struct RingFeed {
  std::int64_t next;
  std::int64_t row;
  int piece;
  int slot;
  unsigned parity;
};

// Thread 0 hands the copy engine every next piece whose slot is free, without waiting: a slot's
// first fill is free, a later one once every warp has arrived on its empty barrier (each warp
// after its last read of the piece before). Called wherever thread 0 passes (its own waits and
// releases), so a slot is refilled soon after the last warp lets it go, and no warp waits for the
// producer at a block barrier.
template <typename T>
__device__ __forceinline__ void ring_feed(RingFeed& f, const void* base, std::int64_t stride, Chunk<T>* slots,
                                          std::uint64_t* full_bar, std::uint64_t* empty_bar, int nslots, int pieces,
                                          std::int64_t total, std::int64_t full_chunks) {
  std::int64_t next = f.next;
  if (next >= total) return;
  std::int64_t row = f.row;
  int piece = f.piece, slot = f.slot;
  unsigned parity = f.parity;
  while (next < total) {
    if (next >= nslots && !mbarrier_test(&empty_bar[slot], parity)) break;
    const std::int64_t first = std::int64_t{piece} * kRingSlotChunks;
    const std::int64_t n = std::max<std::int64_t>(0, std::min<std::int64_t>(full_chunks - first, kRingSlotChunks));
    bulk_copy_to_shared(slots + std::int64_t{slot} * kRingSlotChunks,
                        static_cast<const T*>(base) + row * stride + first * kChunk,
                        static_cast<unsigned>(n * static_cast<std::int64_t>(sizeof(Chunk<T>))), &full_bar[slot]);
    ++next;
    if (++piece == pieces) piece = 0, row += gridDim.x;
    if (++slot == nslots) slot = 0, parity ^= 1u;
  }
  f.next = next;
  f.row = row;
  f.piece = piece;
  f.slot = slot;
  f.parity = parity;
}

template <typename T, typename G, bool kQuant, bool kAdd>
__global__ void __launch_bounds__(kRingThreads, 1) fwd_ring_kernel(Params p, Ring ring) {
  constexpr Mutant M = Mutant::none;
  extern __shared__ uint4 smem_ring[];
  __shared__ std::uint64_t full_x[kRingMaxSlots], empty_x[kRingMaxSlots];
  __shared__ std::uint64_t full_o[kAdd ? kRingMaxSlots : 1], empty_o[kAdd ? kRingMaxSlots : 1];
  __shared__ RingFeed feed_x, feed_o;
  __shared__ float sum_partials[kWarp];
  __shared__ float max_partials[kWarp];
  Chunk<T>* const xs = reinterpret_cast<Chunk<T>*>(smem_ring);
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
  const std::int64_t total = my_rows * P;  // pieces of each tensor this block streams

  auto feed = [&] {  // thread 0 only
    ring_feed<T>(feed_x, p.x, p.x_stride, xs, full_x, empty_x, SX, P, total, full);
    if constexpr (kAdd) ring_feed<T>(feed_o, p.o, p.o_stride, os, full_o, empty_o, SO, P, total, full);
  };
  // Wait for a piece's bytes; thread 0 feeds the rings first and keeps feeding them meanwhile (it
  // is the only producer, so it must never block on a piece it has yet to issue).
  auto wait_full = [&](std::uint64_t* bar, unsigned parity) {
    if (t == 0) {
      do feed();
      while (!mbarrier_test(bar, parity));
    } else {
      mbarrier_wait(bar, parity);
    }
  };
  // A warp is done with a slot: one arrival on its empty barrier.
  auto release = [&](std::uint64_t* bar) {
    __syncwarp();
    if (lane == 0) mbarrier_arrive(bar);
  };

  if (t == 0) {
    for (int i = 0; i < SX; ++i) mbarrier_init(&full_x[i], 1), mbarrier_init(&empty_x[i], kRingThreads / kWarp);
    if constexpr (kAdd) {
      for (int i = 0; i < SO; ++i) mbarrier_init(&full_o[i], 1), mbarrier_init(&empty_o[i], kRingThreads / kWarp);
    }
    mbarrier_init_fence();
    feed_x = RingFeed{0, static_cast<std::int64_t>(blockIdx.x), 0, 0, 1u};
    feed_o = RingFeed{0, static_cast<std::int64_t>(blockIdx.x), 0, 0, 1u};
    feed();
  }
  __syncthreads();

  RingPos xrow;  // piece 0 of the current row in the x ring
  RingPos opos;  // the next piece of the o ring
  for (std::int64_t j = 0; j < my_rows; ++j) {
    const std::int64_t row = blockIdx.x + j * grid;
    const T* xr = static_cast<const T*>(p.x) + row_off<M>(row, p.x_stride, D, sizeof(T));
    const T* orow = kAdd ? static_cast<const T*>(p.o) + row_off<M>(row, p.o_stride, D, sizeof(T)) : nullptr;
    T* xw = kAdd ? static_cast<T*>(p.x_out) + row_off<M>(row, p.x_stride, D, sizeof(T)) : nullptr;
    auto x_slot = [&](int k) -> Chunk<T>& {
      return xs[std::int64_t{xrow.plus(k, SX).slot} * kRingSlotChunks + t];
    };

    // Pass 1: h (the fused add writes it to x's slot and to the residual), Σh², thread t's chunks
    // in order.
    SumSquares<T, M> ss;
    for (int k = 0; k < P; ++k) {
      const std::int64_t c = std::int64_t{k} * kRingSlotChunks + t;
      const RingPos xp = xrow.plus(k, SX);
      wait_full(&full_x[xp.slot], xp.parity);
      if constexpr (kAdd) wait_full(&full_o[opos.slot], opos.parity);
      if (c < nchunks) {
        Chunk<T>& xs_c = x_slot(k);
        Chunk<T> h = c < full ? xs_c : load_row_chunk<T, M>(xr, c, full, n_tail);
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
          xs_c = h;
        } else {
          if (c >= full) xs_c = h;  // the partial chunk, for the later passes
        }
#pragma unroll
        for (int e = 0; e < kChunk; ++e) ss.add(a[e]);
      }
      if constexpr (kAdd) {
        release(&empty_o[opos.slot]);  // o is read once (a read needs no proxy fence)
        opos.step(SO);
      }
    }
    const float sum = block_sum<true>(ss.acc, sum_partials);
    const float r = rstd_of<M>(sum, D, nchunks * kChunk, p.eps);
    if (t == 0 && p.rstd != nullptr) p.rstd[row] = r;

    auto y_chunk = [&](int k, std::int64_t c, float (&y)[kChunk]) {
      float w[kChunk];
      load_weights<G, M>(p, row, c, full, n_tail, w);
      const Chunk<T> hc = x_slot(k);
#pragma unroll
      for (int e = 0; e < kChunk; ++e) y[e] = y_of<T, M>(chunk_get(hc, e), r, w[e], p.convention);
    };
    // After the last pass over piece k. A thread that wrote its slot position (h under the fused
    // add, the partial chunk) orders that write before the copy engine's next one (the proxy fence:
    // generic writes, then an async-proxy write); reads need no fence (the barrier's release
    // orders them, as a consumer's release of a TMA pipeline stage).
    auto release_x = [&](int k) {
      if (kAdd || (n_tail > 0 && std::int64_t{k} * kRingSlotChunks + t == full)) fence_proxy_async_shared();
      release(&empty_x[xrow.plus(k, SX).slot]);
      if (t == 0) feed();
    };

    if constexpr (!kQuant) {
      T* yr = static_cast<T*>(p.y) + row_off<M>(row, p.y_stride, D, sizeof(T));
      for (int k = 0; k < P; ++k) {
        const std::int64_t c = std::int64_t{k} * kRingSlotChunks + t;
        if (c < nchunks) {
          float y[kChunk];
          y_chunk(k, c, y);
          store_row_chunk(yr, c, full, n_tail, pack<T>(y));
        }
        release_x(k);
      }
    } else {
      unsigned char* qr = static_cast<unsigned char*>(p.y) + row_off<M>(row, p.y_stride, D, 1);
      const Quant mode = static_cast<Quant>(p.quant);
      float s_row = 0.0f;
      if (mode == Quant::static_scale) {
        s_row = *p.scale;
      } else if (mode == Quant::dynamic_token) {
        unsigned bits = 0;
        for (int k = 0; k < P; ++k) {
          const std::int64_t c = std::int64_t{k} * kRingSlotChunks + t;
          if (c < nchunks) {
            float y[kChunk];
            y_chunk(k, c, y);
            bits = max(bits, chunk_amax_bits(y, c, full, n_tail));
          }
        }
        const float amax = block_max<true>(__uint_as_float(bits), max_partials);
        s_row = scale_of<M>(amax, p);
        if (t == 0) p.scale[row] = s_row;
      }
      const float inv_row = __fdiv_rn(1.0f, s_row);
      // Every thread runs the P steps, so the group butterflies see full warps.
      for (int k = 0; k < P; ++k) {
        const std::int64_t c = std::int64_t{k} * kRingSlotChunks + t;
        const bool mine = c < nchunks;
        float y[kChunk];
        if (mine) y_chunk(k, c, y);
        store_fp8_output<M, kGroupChunks>(p, qr, row, c, mine, t, y, inv_row, mode, full, n_tail);
        release_x(k);
      }
    }
    xrow = xrow.plus(P % SX, SX);  // P <= SX: at most one wrap...
    if (P == SX) xrow.parity ^= 1u;  // ...and P == SX lands on the same slot one fill later
  }
}

}  // namespace rmsnorm::cuda::fwd
