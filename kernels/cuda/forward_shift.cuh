// fwd.shift_row: the block-per-row forward (and fused add) for rows of ANY element alignment at
// vector width — odd D, odd strides, misaligned bases — with block_row's thread mapping and
// reduction order, hence bitwise block_row's outputs on aligned rows and batch invariance on
// misaligned ones (a row's order depends on D only, never on where the row starts).
//
// How. Canonical chunk c of a row is its columns [8c, 8c + 8), as in block_row. A row that starts
// m bytes past a 16-byte boundary (0 < m < 16; per tensor and row, uniform over the block) is
// read as the aligned 16-byte words that cover it: word k holds the row's bytes [16k − m,
// 16k − m + 16). The thread owning chunk c loads its own words (k = W·c … W·c + W − 1, W words per
// chunk) and takes word W·(c + 1) from the lane owning chunk c + 1 (a shuffle; the last lane of a
// warp loads it itself); the chunk is then bytes [m, m + 16) of each pair of consecutive words
// (a funnel shift). Words that stick out of the row are read element by element, never past it.
// Stores mirror this: word W·c holds the tail of chunk c − 1 and the head of chunk c; the owner
// of c writes it with one 16-byte store when the owner of c − 1 is the previous lane of its warp
// (the tail comes by a shuffle) and the word lies inside the row; otherwise each owner writes its
// own bytes of the word element by element. Both owners evaluate the same rule, so every byte of
// the row is written exactly once, and nothing outside it.
//
// Hazards. Every load of a row precedes the block reduction's barrier, every y store follows it;
// the fused add's residual stores (before the barrier) write only bytes whose values travelled by
// shuffle or that the storing thread alone reads: a lane that loads its neighbour's word itself
// uses only its own chunk's bytes from it.
#pragma once

#include <cstdint>

#include "forward_kernels.cuh"

namespace rmsnorm::cuda::fwd {

// One row of one tensor, seen as aligned 16-byte words.
template <typename T>
struct WordRow {
  const unsigned char* aligned = nullptr;  // row start rounded down to 16 bytes
  int m = 0;                               // row start − aligned, bytes (a multiple of sizeof(T))
  std::int64_t bytes = 0;                  // D · sizeof(T)

  __device__ __forceinline__ WordRow(const void* row, std::int64_t dim) {
    const auto a = reinterpret_cast<std::uintptr_t>(row);
    m = static_cast<int>(a & 15u);
    aligned = reinterpret_cast<const unsigned char*>(a - static_cast<std::uintptr_t>(m));
    bytes = dim * static_cast<std::int64_t>(sizeof(T));
  }
  // Word k lies wholly inside the row.
  __device__ __forceinline__ bool full(std::int64_t k) const {
    const std::int64_t first = 16 * k - m;
    return first >= 0 && first + 16 <= bytes;
  }
};

// Word k of a row: one 16-byte load when it lies inside the row, else its in-row elements one by
// one (zeros elsewhere; nothing outside the row is touched).
template <typename T, bool kOnce>
__device__ __forceinline__ uint4 load_word(const WordRow<T>& r, std::int64_t k) {
  if (r.full(k)) {
    const uint4* p = reinterpret_cast<const uint4*>(r.aligned + 16 * k);
    return kOnce ? __ldcs(p) : *p;
  }
  unsigned u[4] = {0u, 0u, 0u, 0u};
  constexpr int kSize = static_cast<int>(sizeof(T));
#pragma unroll
  for (int e = 0; e < 16 / kSize; ++e) {
    const std::int64_t b = 16 * k - r.m + e * kSize;  // row byte of slot e
    if (b >= 0 && b < r.bytes) {
      if constexpr (kSize == 2) {
        const unsigned v = *reinterpret_cast<const unsigned short*>(r.aligned + 16 * k + e * kSize);
        u[e / 2] |= v << (16 * (e % 2));
      } else {
        u[e] = *reinterpret_cast<const unsigned*>(r.aligned + 16 * k + e * kSize);
      }
    }
  }
  return make_uint4(u[0], u[1], u[2], u[3]);
}

// Bytes [s, s + 16) of the 32 bytes a ‖ b, for 0 ≤ s < 16 (s a multiple of 2).
template <int Q>
__device__ __forceinline__ uint4 shift_pair_q(const unsigned (&cat)[8], unsigned bits) {
  return make_uint4(__funnelshift_r(cat[Q + 0], cat[Q + 1], bits), __funnelshift_r(cat[Q + 1], cat[Q + 2], bits),
                    __funnelshift_r(cat[Q + 2], cat[Q + 3], bits), __funnelshift_r(cat[Q + 3], cat[Q + 4], bits));
}
__device__ __forceinline__ uint4 shift_pair(const uint4& a, const uint4& b, int s) {
  const unsigned cat[8] = {a.x, a.y, a.z, a.w, b.x, b.y, b.z, b.w};
  const unsigned bits = 8u * static_cast<unsigned>(s & 3);
  switch (s >> 2) {
    case 0: return shift_pair_q<0>(cat, bits);
    case 1: return shift_pair_q<1>(cat, bits);
    case 2: return shift_pair_q<2>(cat, bits);
    default: return shift_pair_q<3>(cat, bits);
  }
}

__device__ __forceinline__ uint4 shfl_down_word(const uint4& w) {
  return make_uint4(__shfl_down_sync(kFullMask, w.x, 1), __shfl_down_sync(kFullMask, w.y, 1),
                    __shfl_down_sync(kFullMask, w.z, 1), __shfl_down_sync(kFullMask, w.w, 1));
}
__device__ __forceinline__ uint4 shfl_up_word(const uint4& w) {
  return make_uint4(__shfl_up_sync(kFullMask, w.x, 1), __shfl_up_sync(kFullMask, w.y, 1),
                    __shfl_up_sync(kFullMask, w.z, 1), __shfl_up_sync(kFullMask, w.w, 1));
}

// Canonical chunk c of a misaligned row (r.m > 0). Every lane of the warp must call it (the
// shuffle), whether or not c is a chunk of the row.
template <typename T, bool kOnce>
__device__ __forceinline__ Chunk<T> load_shifted_chunk(const WordRow<T>& r, std::int64_t c, int lane) {
  constexpr int W = Chunk<T>::kWords;
  uint4 own[W];
#pragma unroll
  for (int w = 0; w < W; ++w) own[w] = load_word<T, kOnce>(r, W * c + w);
  uint4 next = shfl_down_word(own[0]);  // word W(c + 1): the first own word of chunk c + 1
  if (lane == kWarp - 1) next = load_word<T, kOnce>(r, W * (c + 1));
  Chunk<T> out;
#pragma unroll
  for (int w = 0; w < W; ++w) out.w[w] = shift_pair(own[w], w + 1 < W ? own[w + 1] : next, r.m);
  return out;
}

// Writes canonical chunk c (values v) into a misaligned row (rr.m > 0). Every lane of the warp
// must call it. `exists`: c is a chunk of the row (c < ceil(D/8)); `next_exists`: so is c + 1.
template <typename T, bool kOnce>
__device__ __forceinline__ void store_shifted_chunk(T* row, const WordRow<T>& rr, std::int64_t c, int lane, bool exists,
                                                    bool next_exists, const Chunk<T>& v) {
  constexpr int W = Chunk<T>::kWords;
  constexpr int kSize = static_cast<int>(sizeof(T));
  const uint4 prev = shfl_up_word(v.w[W - 1]);  // the last word of chunk c − 1 (lanes > 0)
  if (!exists) return;
  unsigned char* aligned = const_cast<unsigned char*>(rr.aligned);
  // Who writes the two words shared with the neighbours (see the file comment).
  const bool head_vector = lane > 0 && rr.full(W * c);                   // word W·c, by this lane
  const bool tail_vector = lane < kWarp - 1 && next_exists && rr.full(W * (c + 1));  // word W(c+1), by the next lane
  // 16-byte stores: the shared head word, then the words wholly inside the chunk.
#pragma unroll
  for (int w = 0; w < W; ++w) {
    const std::int64_t k = W * c + w;
    const bool vector = w == 0 ? head_vector : rr.full(k);
    if (!vector) continue;
    const uint4 word = shift_pair(w == 0 ? prev : v.w[w - 1], v.w[w], 16 - rr.m);
    uint4* p = reinterpret_cast<uint4*>(aligned + 16 * k);
    if constexpr (kOnce) __stcs(p, word); else *p = word;
  }
  // Element stores for the bytes of this chunk in words nobody stores whole.
#pragma unroll
  for (int j = 0; j < kChunk; ++j) {
    const std::int64_t b = c * kChunk * kSize + j * kSize;  // row byte of column 8c + j
    if (b >= rr.bytes) continue;
    const std::int64_t k = (b + rr.m) >> 4;
    const bool whole = k == W * c ? head_vector : (k == W * (c + 1) ? tail_vector : rr.full(k));
    if (whole) continue;
    const uint4& vw = v.w[(j * kSize) / 16];
    const int slot = ((j * kSize) % 16) / 4;
    const unsigned u = slot == 0 ? vw.x : slot == 1 ? vw.y : slot == 2 ? vw.z : vw.w;
    if constexpr (kSize == 2) {
      reinterpret_cast<unsigned short*>(row)[c * kChunk + j] = static_cast<unsigned short>(((j & 1) ? (u >> 16) : u) & 0xffffu);
    } else {
      reinterpret_cast<unsigned*>(row)[c * kChunk + j] = u;
    }
  }
}

// The kernel: block_row's mapping (chunk c on thread c % lanes, ITERS per thread), plain forward
// or fused add, non-FP8 outputs; each tensor's misalignment decides per row between the direct
// chunk access (m = 0) and the shifted one.
// Registers per thread, stated: left alone ptxas takes ~128 for every form, and the small blocks
// of short rows (64 threads at D = 1025) then fit only 8 to an SM. 16-bit rows without the add
// fit in 80 (12 blocks of 64 threads); the fused add and fp32 rows keep 128.
template <typename T, bool kAdd>
inline constexpr int kShiftRegs = (sizeof(T) == 2 && !kAdd) ? 80 : 128;
template <typename T, typename G, bool kAdd, int ITERS>
__global__ void __maxnreg__((kShiftRegs<T, kAdd>)) fwd_shift_kernel(Params p) {
  constexpr Mutant M = Mutant::none;
  __shared__ float sum_partials[kWarp];
  const int lanes = static_cast<int>(blockDim.x);  // a multiple of 32
  const int t = static_cast<int>(threadIdx.x);
  const int lane = t & (kWarp - 1);
  const std::int64_t D = p.dim;
  const std::int64_t full = D / kChunk;
  const int n_tail = static_cast<int>(D % kChunk);
  const std::int64_t nchunks = full + (n_tail > 0 ? 1 : 0);
  const WordRow<G> grow(p.g, D);

  for (std::int64_t row = blockIdx.x; row < p.rows; row += gridDim.x) {
    const T* xr = static_cast<const T*>(p.x) + row * p.x_stride;
    const WordRow<T> xw(xr, D);
    Chunk<T> h[ITERS];
#pragma unroll
    for (int i = 0; i < ITERS; ++i) {
      const std::int64_t c = static_cast<std::int64_t>(i) * lanes + t;
      if (xw.m == 0) {
        h[i] = load_row_chunk<T, M, true>(xr, c, full, n_tail);
      } else {
        h[i] = load_shifted_chunk<T, true>(xw, c, lane);
      }
    }
    if constexpr (kAdd) {
      const T* orow = static_cast<const T*>(p.o) + row * p.o_stride;
      const WordRow<T> ow(orow, D);
      T* xo = static_cast<T*>(p.x_out) + row * p.x_stride;
#pragma unroll
      for (int i = 0; i < ITERS; ++i) {
        const std::int64_t c = static_cast<std::int64_t>(i) * lanes + t;
        const Chunk<T> ov = ow.m == 0 ? load_row_chunk<T, M, true>(orow, c, full, n_tail) : load_shifted_chunk<T, true>(ow, c, lane);
        float a[kChunk], b[kChunk];
        unpack(h[i], a);
        unpack(ov, b);
#pragma unroll
        for (int j = 0; j < kChunk; ++j) a[j] = c < nchunks ? a[j] + b[j] : 0.0f;
        h[i] = pack<T>(a);
        if (xw.m == 0) {
          if (c < nchunks) store_row_chunk<T, true>(xo, c, full, n_tail, h[i]);
        } else {
          store_shifted_chunk<T, true>(xo, xw, c, lane, c < nchunks, c + 1 < nchunks, h[i]);
        }
      }
    }
    // Σh²: block_row's order exactly (chunk order, element order, then the block tree).
    SumSquares<T, M> ss;
#pragma unroll
    for (int i = 0; i < ITERS; ++i)
#pragma unroll
      for (int j = 0; j < kChunk; ++j) ss.add(chunk_get(h[i], j));
    const float total = block_sum<true>(ss.acc, sum_partials);
    const float r = rstd_of<M>(total, D, nchunks * kChunk, p.eps);
    if (t == 0 && p.rstd != nullptr) p.rstd[row] = r;

    T* yr = static_cast<T*>(p.y) + row * p.y_stride;
    const WordRow<T> yw(yr, D);
#pragma unroll
    for (int i = 0; i < ITERS; ++i) {
      const std::int64_t c = static_cast<std::int64_t>(i) * lanes + t;
      float w[kChunk];
      if (p.convention == static_cast<int>(Convention::no_weight)) {
#pragma unroll
        for (int j = 0; j < kChunk; ++j) w[j] = 1.0f;
      } else if (grow.m == 0) {
        load_weights<G, M>(p, row, c, full, n_tail, w);
      } else {
        const Chunk<G> gc = load_shifted_chunk<G, false>(grow, c, lane);
        unpack(gc, w);
#pragma unroll
        for (int j = 0; j < kChunk; ++j) w[j] = effective_weight(w[j], p.convention);
      }
      float y[kChunk];
#pragma unroll
      for (int j = 0; j < kChunk; ++j) y[j] = y_of<T, M>(chunk_get(h[i], j), r, w[j], p.convention);
      const Chunk<T> yc = pack<T>(y);
      if (yw.m == 0) {
        if (c < nchunks) store_row_chunk<T, true>(yr, c, full, n_tail, yc);
      } else {
        store_shifted_chunk<T, true>(yr, yw, c, lane, c < nchunks, c + 1 < nchunks, yc);
      }
    }
    __syncthreads();  // the partials are reused by the next row
  }
}

}  // namespace rmsnorm::cuda::fwd
