// Host side of the backward family: configuration by D, the declared accumulation shapes, the
// workspace contract, can_implement() and the launcher templated on the mutant switch.
// Shared by the backward variants (variants/bwd_*.cuh), products and mutants alike.
#pragma once

#include <algorithm>
#include <initializer_list>
#include <string>
#include <type_traits>

#include "backward_kernels.cuh"
#include "rmsnorm/dispatch.h"
#include "rmsnorm/validate.h"

namespace rmsnorm::cuda::bwd {

// Largest D: c = s / D divides by D as an fp32, exact only up to 2^24.
inline constexpr std::int64_t kMaxDim = std::int64_t{1} << 24;
// Largest D of the register-resident kernel: 1024 threads × one chunk of 8 for every type (two
// chunks per thread at 1024 threads spill at 64 registers); 16-bit rows up to 16384 as 512
// threads × 4 chunks at 128 registers (fp32 chunks are twice the registers: they spill there).
inline constexpr std::int64_t kMaxFusedDim = 8192;
inline constexpr std::int64_t kMaxFusedDim16 = 16384;

// How a row is worked on, chosen from D alone (so the accumulation shape is a function of D).
struct Config {
  int threads = 0;   // block size
  int rows = 1;      // row streams per block (one warp each when > 1)
  int chunks = 1;    // chunks of 8 elements per thread (register-resident kernel)
  bool reread = false;
  int group() const { return threads / rows; }  // threads summing one row
};

inline std::int64_t chunks_of(std::int64_t dim) { return (dim + kChunk - 1) / kChunk; }

inline Config fused_config(std::int64_t dim) {
  const std::int64_t nc = chunks_of(dim);
  if (nc <= 32) return {512, kMultiRows, 1, false};    // D ≤ 256: a warp per row, 16 rows a block
  if (nc <= 64) return {256, kMultiRowsWide, 2, false};  // D ≤ 512: 8 rows a block
  if (nc <= 128) return {128, 1, 1, false};            // D ≤ 1024
  if (nc <= 256) return {256, 1, 1, false};            // D ≤ 2048
  if (nc <= 512) return {512, 1, 1, false};            // D ≤ 4096
  if (nc <= 1024) return {1024, 1, 1, false};          // D ≤ 8192
  return {512, 1, 4, false};                           // D ≤ 16384, 16-bit types only
}
inline Config reread_config() { return {kRereadThreads, 1, 1, true}; }
inline Config config_for(std::int64_t dim, bool allow_fused, std::size_t elem_bytes) {
  const std::int64_t max_fused = elem_bytes == 2 ? kMaxFusedDim16 : kMaxFusedDim;
  return allow_fused && dim <= max_fused ? fused_config(dim) : reread_config();
}

// P = kProgramsPerSM × SM count of the current device: a function of the device only. 0 when
// no device answers.
inline std::int64_t programs() { return static_cast<std::int64_t>(sm_count()) * kProgramsPerSM; }

inline std::int64_t ceil_div(std::int64_t a, std::int64_t b) { return (a + b - 1) / b; }

// Programs launched for R rows (their partial rows are what stage 2 adds): depends on R and P.
inline std::int64_t programs_launched(const Config& c, std::int64_t rows, std::int64_t p) {
  return std::min(p, ceil_div(rows, c.rows));
}

// Workspace: one fp32 partial row of D per launched program, at most min(P, R) rows.
inline std::size_t workspace_bytes(std::int64_t rows, std::int64_t dim) {
  if (rows <= 0 || dim <= 0) return 0;
  const std::int64_t p = std::max<std::int64_t>(programs(), 1);
  return static_cast<std::size_t>(std::min(p, rows)) * static_cast<std::size_t>(dim) * sizeof(float);
}

// Row reduction Σ ĝ x̂ of one row: each thread chains its elements (its chunks in order, 8
// elements each; zero padding past D adds exact zeros, so at most D real terms), then the
// butterfly: 5 levels in a warp, plus ceil_log2(warps) across the warps of a block.
inline AccumShape row_shape_of(const Config& c, std::int64_t dim) {
  const std::int64_t per_chunk_threads = ceil_div(chunks_of(dim), c.group());
  AccumShape s;
  s.per_thread = std::min<std::int64_t>(per_chunk_threads * kChunk, dim);
  s.tree_depth = 5 + (c.rows > 1 ? 0 : ceil_log2(c.threads / kWarp));
  return s;
}

// The declared shape of a variant is a function of D alone; where the configuration also
// depends on the element size (8192 < D ≤ 16384: 16-bit rows register-resident, fp32 rows
// re-read), the larger chain and the deeper tree of the two bound both.
inline AccumShape row_shape_for(std::int64_t dim, bool allow_fused) {
  const AccumShape a = row_shape_of(config_for(dim, allow_fused, 2), dim);
  const AccumShape b = row_shape_of(config_for(dim, allow_fused, 4), dim);
  return {std::max(a.per_thread, b.per_thread), std::max(a.tree_depth, b.tree_depth)};
}

// The dg sum over rows of one column: a stream chains its rows in order (ceil(R/streams)
// terms); the S streams of a program (S = 16 for D ≤ 256, 8 for D ≤ 512, else 1) are added in
// stream order (S − 1 more sequential adds); stage 2 chains ceil(P/16) partial rows per lane,
// then a 4-level tree. D is not known here, so the longest chain over the S the variant may use
// counts (`streams`: the S > 1 it may use besides S = 1).
inline AccumShape dg_shape_of(std::int64_t rows, std::initializer_list<std::int64_t> streams,
                              std::int64_t programs_per_sm = kProgramsPerSM) {
  const std::int64_t p = std::max<std::int64_t>(programs() / kProgramsPerSM * programs_per_sm, 1);
  const std::int64_t r = std::max<std::int64_t>(rows, 1);
  std::int64_t chain = ceil_div(r, p);
  for (const std::int64_t s : streams) chain = std::max(chain, ceil_div(r, p * s) + (s - 1));
  AccumShape s;
  // Partial rows of programs that took no row are exact zeros, and adding one rounds nothing: a
  // term meets at most R - 1 rounded additions, so the chain counts at most R terms.
  s.per_thread = std::min(chain + ceil_div(p, kStage2Lanes) - 1, r);
  s.tree_depth = ceil_log2(kStage2Lanes);
  return s;
}

// Every view the kernel reads or writes with 16-byte vectors is 16-byte aligned, rows included
// (the dispatch table asks the same question).
inline bool all_aligned(const BackwardArgs& a) { return rmsnorm::dispatch::backward_views_aligned(a, kVecBytes); }

// Capability checks after the contract's validation. `mutant`: the catalog variants run only the
// register-resident, aligned path (the one they flip a switch in).
inline Status can_implement(const BackwardArgs& a, bool mutant) {
  using Code = Status::Code;
  Status s = validate(a);
  if (!s.ok()) return s;
  if (a.dim > kMaxDim) return Status::fail(Code::unsupported, "D > 2^24 (c = s/D divides by D in fp32)");
  if (mutant && a.dim > kMaxFusedDim)
    return Status::fail(Code::unsupported, "mutant variants run only the register-resident path (D <= 8192)");
  if (mutant && a.rows > 0 && !all_aligned(a))
    return Status::fail(Code::misaligned, "mutant variants run only the 16-byte aligned path");
  s = device_status();
  if (!s.ok()) return s;
  if (a.rows > 0 && a.dg) {
    const std::size_t need = workspace_bytes(a.rows, a.dim);
    if (a.workspace == nullptr || a.workspace_bytes < need)
      return Status::fail(Code::workspace_too_small, "dg needs " + std::to_string(need) + " workspace bytes, got " +
                                                         std::to_string(a.workspace == nullptr ? 0 : a.workspace_bytes));
    if (!ptr_aligned(a.workspace, sizeof(float))) return Status::fail(Code::misaligned, "workspace not 4-byte aligned");
    const std::uint64_t wb = need;
    auto clash = [&](const void* p, std::uint64_t n) { return p && overlaps(a.workspace, wb, p, n); };
    auto view = [&](const Tensor& t) { return span_bytes(a.rows, a.dim, t.stride, size_of(t.type)); };
    if (clash(a.x.data, view(a.x)) || clash(a.dy.data, view(a.dy)) || clash(a.dx.data, view(a.dx)) ||
        clash(a.dresidual.data, view(a.dresidual)) || clash(a.rstd, static_cast<std::uint64_t>(a.rows) * 4) ||
        clash(a.g, static_cast<std::uint64_t>(a.dim) * size_of(a.g_type)))
      return Status::fail(Code::bad_overlap, "workspace overlaps an argument");
  }
  return Status::success();
}

template <typename Out>
inline cudaError_t launch_stage2(const float* partials, std::int64_t nparts, std::int64_t dim, void* dg, cudaStream_t st) {
  const auto blocks = static_cast<unsigned>(ceil_div(dim, kColsPerStage2Block));
  // A programmatic dependent of stage 1 (launch_kernel): its launch overlaps stage 1's last rows;
  // it reads the partials only after stage 1 completed (begin_dependent_grid).
  return launch_kernel(dg_column_sum_kernel<Out>, blocks, kColsPerStage2Block * kStage2Lanes, 0, st, partials, nparts,
                       dim, static_cast<Out*>(dg));
}

template <typename T, typename G, int kThreads, int kRows, int kChunks, bool kAligned, Mutant M>
inline void launch_fused(const Params<T, G>& p, std::int64_t grid, cudaStream_t st) {
  const std::size_t smem =
      (kRows > 1 && p.partials && M != Mutant::M10_dg_float_atomics) ? dg_combine_bytes(kRows, p.dim) : 0;
  launch_kernel(backward_fused_kernel<T, G, kThreads, kRows, kChunks, kAligned, M>, static_cast<unsigned>(grid),
                kThreads, smem, st, p);
}

template <typename T, typename G, bool kAligned, Mutant M>
inline void launch_reread(const Params<T, G>& p, std::int64_t grid, cudaStream_t st) {
  launch_kernel(backward_reread_kernel<T, G, kAligned, M>, static_cast<unsigned>(grid), kRereadThreads, 0, st, p);
}

template <typename T, typename G, bool kAligned, Mutant M>
inline void launch_stage1(const Config& c, const Params<T, G>& p, std::int64_t grid, cudaStream_t st) {
  // bwd.persistent_rows' mutants run the register-resident kernel only; bwd.reread_rows' run the
  // re-reading one through reread_launch<M>.
  if constexpr (M == Mutant::none) {
    if (c.reread) return launch_reread<T, G, kAligned, M>(p, grid, st);
  }
  const std::int64_t nc = chunks_of(p.dim);
  if (nc <= 32) return launch_fused<T, G, 512, kMultiRows, 1, kAligned, M>(p, grid, st);
  if (nc <= 64) return launch_fused<T, G, 256, kMultiRowsWide, 2, kAligned, M>(p, grid, st);
  if (nc <= 128) return launch_fused<T, G, 128, 1, 1, kAligned, M>(p, grid, st);
  if (nc <= 256) return launch_fused<T, G, 256, 1, 1, kAligned, M>(p, grid, st);
  if (nc <= 512) return launch_fused<T, G, 512, 1, 1, kAligned, M>(p, grid, st);
  if (nc <= 1024) return launch_fused<T, G, 1024, 1, 1, kAligned, M>(p, grid, st);
  // 8192 < D ≤ 16384 comes here for 16-bit rows only: config_for() sends fp32 rows to the
  // re-reading kernel above, and mutants are declined beyond 8192 by can_implement().
  if constexpr (sizeof(T) == 2) return launch_fused<T, G, 512, 1, 4, kAligned, M>(p, grid, st);
}

// Whether a launcher instantiates stage 1 for rows of T with weights of G: every pair for the
// products (and bwd.persistent_rows' mutants: kAllTypes), bf16 rows with bf16 weights only for
// the other mutants (their variants declare that much: the build stays small).
template <Mutant M, bool kAllTypes, typename T, typename G>
inline constexpr bool kStage1Built =
    M == Mutant::none || kAllTypes || (std::is_same_v<T, __nv_bfloat16> && std::is_same_v<G, T>);
inline Status mutant_types_status() {
  return Status::fail(Status::Code::unsupported, "this mutant is built for bf16 rows with bf16 weights only");
}
// Rows and weights a mutant of kStage1Built's bf16-only kind takes (its can_implement() asks).
inline bool mutant_types_ok(const BackwardArgs& a) {
  return a.x.type == DType::bf16 && (a.convention == Convention::no_weight || a.g_type == DType::bf16);
}

// Runs stage 1 (dx and the dg partials) by `stage1(TypeTag<T>, TypeTag<G>, params, programs,
// stream, aligned)` and, when dg is wanted, stage 2 over the `programs` partial rows stage 1
// wrote (1 ≤ programs ≤ min(P, R), the workspace's rows; one program's row is an fp32 dg
// itself). can_implement() must have accepted `a` and R must be > 0. Stage 1 is instantiated for
// the type pairs of kStage1Built only.
template <Mutant M, bool kAllTypes = false, typename Stage1>
inline Status run_stages(const BackwardArgs& a, std::int64_t grid, Stage1&& stage1) {
  const cudaStream_t st = as_stream(a.stream);
  const bool aligned = all_aligned(a);
  float* ws = static_cast<float*>(a.workspace);
  const bool want_dg = a.dg != nullptr;
  // One program: its partial row is dg itself (stage 2 would add it to -0.0, which gives the same
  // fp32 bits), so stage 1 writes an fp32 dg directly and stage 2 is not launched (R = 1: one
  // kernel a call instead of two). Every stage 1 writes its partial row with 4-byte stores.
  const bool direct = want_dg && grid == 1 && a.dg_type == DType::f32 && M != Mutant::M10_dg_float_atomics;

  if (M == Mutant::M10_dg_float_atomics && want_dg) {
    if (cudaMemsetAsync(ws, 0, static_cast<std::size_t>(a.dim) * sizeof(float), st) != cudaSuccess)
      return launch_status("backward M10 memset");
  }
  bool built = true;
  bool dispatched = dispatch_activation(a.x.type, [&](auto tt) {
    // (decayed: nvcc's host pass sees decltype(tt) as a reference inside the nested lambda)
    using T = typename std::decay_t<decltype(tt)>::type;
    auto run_with = [&](auto gt) {
      using G = typename decltype(gt)::type;
      if constexpr (!kStage1Built<M, kAllTypes, T, G>) {
        built = false;
      } else {
        Params<T, G> p;
        p.x = static_cast<const T*>(a.x.data);
        p.dy = static_cast<const T*>(a.dy.data);
        p.dx = static_cast<T*>(a.dx.data);
        p.dres = static_cast<const T*>(a.dresidual.data);
        p.g = static_cast<const G*>(a.g);
        p.rstd = a.rstd;
        p.sx = a.x.stride;
        p.sdy = a.dy.stride;
        p.sdx = a.dx.stride;
        p.sdres = a.dresidual.stride;
        p.rows = a.rows;
        p.dim = a.dim;
        // llama's two roundings are the forward's; its gradient is the exact function's, the
        // standard one (docs/contract.md#conventions; the oracle and host.reference read it so).
        p.weight = a.convention == Convention::gemma       ? WeightMode::gemma
                   : a.convention == Convention::no_weight ? WeightMode::none
                                                           : WeightMode::standard;
        if (p.weight == WeightMode::none) p.g = nullptr;
        p.partials = !want_dg ? nullptr : direct ? static_cast<float*>(a.dg) : ws;
        p.dg_atomic = M == Mutant::M10_dg_float_atomics && want_dg ? ws : nullptr;
        stage1(TypeTag<T>{}, gt, p, grid, st, aligned);
      }
    };
    if (a.convention == Convention::no_weight || a.g_type == StorageTraits<T>::dtype) {
      run_with(TypeTag<T>{});
    } else {
      run_with(TypeTag<float>{});
    }
  });
  if (!dispatched) return Status::fail(Status::Code::unsupported, "x type");
  if (!built) return mutant_types_status();
  Status s = launch_status("backward stage 1");
  if (!s.ok() || !want_dg || direct) return s;
  const std::int64_t nparts = M == Mutant::M10_dg_float_atomics ? 1 : grid;
  cudaError_t e = cudaSuccess;
  switch (a.dg_type) {
    case DType::f32: e = launch_stage2<float>(ws, nparts, a.dim, a.dg, st); break;
    case DType::f16: e = launch_stage2<__half>(ws, nparts, a.dim, a.dg, st); break;
    case DType::bf16: e = launch_stage2<__nv_bfloat16>(ws, nparts, a.dim, a.dg, st); break;
    default: return Status::fail(Status::Code::unsupported, "dg type");
  }
  if (e != cudaSuccess) {
    (void)cudaGetLastError();
    return Status::fail(Status::Code::launch_failed, std::string("backward stage 2 (dg column sum): ") + cudaGetErrorString(e));
  }
  return launch_status("backward stage 2 (dg column sum)");
}

// The register-resident (allow_fused) or the re-reading stage 1, by D.
// Programs for R rows with configuration `cfg` (0: no device answered for the SM count).
inline std::int64_t programs_for(const Config& cfg, std::int64_t rows) {
  const std::int64_t p_dev = programs();
  return p_dev <= 0 ? 0 : programs_launched(cfg, rows, p_dev);
}
inline Status no_programs() { return Status::fail(Status::Code::no_device, "no CUDA device answered for the SM count"); }
// Programs of a variant of one block per SM that takes `rows_per_step` rows per program and step
// (bwd.staged_streams, bwd.packed_rows): min(SMs, ceil(R / rows_per_step)); 0 when no device
// answered for the SM count.
inline std::int64_t one_per_sm_grid(std::int64_t rows, std::int64_t rows_per_step) {
  const std::int64_t sms = sm_count();
  return sms <= 0 ? 0 : std::min(sms, ceil_div(rows, rows_per_step));
}

// bwd.persistent_rows (allow_fused) and bwd.reread_rows (the products), and bwd.persistent_rows'
// mutants (every type pair).
template <Mutant M>
inline Status launch(const BackwardArgs& a, bool allow_fused) {
  const Config cfg = config_for(a.dim, allow_fused, size_of(a.x.type));
  const std::int64_t grid = programs_for(cfg, a.rows);
  if (grid <= 0) return no_programs();
  return run_stages<M, /*kAllTypes=*/true>(a, grid, [&](auto tt, auto gt, const auto& p, std::int64_t n, cudaStream_t st, bool aligned) {
    using T = typename decltype(tt)::type;
    using G = typename decltype(gt)::type;
    if (aligned) {
      launch_stage1<T, G, true, M>(cfg, p, n, st);
    } else if constexpr (M == Mutant::none) {
      launch_stage1<T, G, false, M>(cfg, p, n, st);
    }
  });
}

// bwd.reread_rows' mutants: the re-reading kernel for every D and alignment, as the product
// (launch<Mutant::none>(a, false)), bf16 rows and weights only.
template <Mutant M>
inline Status reread_rows_launch(const BackwardArgs& a) {
  static_assert(M != Mutant::none, "the product runs launch<Mutant::none>(a, false)");
  const std::int64_t grid = programs_for(reread_config(), a.rows);
  if (grid <= 0) return no_programs();
  return run_stages<M>(a, grid, [&](auto tt, auto gt, const auto& p, std::int64_t n, cudaStream_t st, bool aligned) {
    using T = typename decltype(tt)::type;
    using G = typename decltype(gt)::type;
    if (aligned) {
      launch_reread<T, G, true, M>(p, n, st);
    } else {
      launch_reread<T, G, false, M>(p, n, st);
    }
  });
}

// R = 0: dx is empty, but dg = Σ over no rows = 0 must still be written when asked for
// (all-zero bits are +0 in f32, f16 and bf16).
inline Status empty_batch(const BackwardArgs& a) {
  if (a.dg == nullptr) return Status::success();
  const cudaError_t e = cudaMemsetAsync(a.dg, 0, static_cast<std::size_t>(a.dim) * size_of(a.dg_type),
                                        static_cast<cudaStream_t>(a.stream));
  if (e != cudaSuccess) return Status::fail(Status::Code::launch_failed, std::string("dg memset: ") + cudaGetErrorString(e));
  return Status::success();
}

}  // namespace rmsnorm::cuda::bwd
