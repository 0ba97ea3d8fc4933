// rmsnorm-bench: effective bandwidth of the registered device variants (docs/performance.md), next
// to a device-to-device copy of the same bytes timed in the same run.
//
// Bytes model (bytes that must move; g, rstd and scales are negligible and not counted):
//   forward            R·D·(|x| + |y|)                 bf16: 4RD
//   add_forward        R·D·(2|x| + |x| + |y|)          bf16: 8RD  (read x, o; write x, y)
//   forward_quant      R·D·(|x| + 1)                   bf16: 3RD
//   add_forward_quant  R·D·(3|x| + 1)                  bf16: 7RD
//   backward           R·D·3|x| + dg partials          bf16: 6RD  (read x, dy; write dx)
//   add_backward       R·D·4|x| + dg partials
// The copy moves the same total: cudaMemcpyAsync of bytes/2 (each byte read once, written once),
// so ratio = copy time / variant time = variant bandwidth / copy bandwidth.
//
// Timing: CUDA events, warm-up, median of many; the inputs rotate across enough buffer sets to
// exceed 2× the L2 size (read from the device; at most 64 sets, so the smallest shapes stay
// L2-resident). For R ≤ 64 the launches are captured in a CUDA graph and replayed, next to an
// empty kernel captured the same way (small-R target: within 1.2× of it).
//
// Buffers: kept between shapes and reused (Pool, --alloc cache); with a cudaMalloc / cudaFree per
// buffer a shape right after a larger one's free runs up to 24 % slow. Where buffers lie still
// moves some shapes by 3-11 % (the same shape alone in a process, in a fresh-allocation run and
// in a cached one), so a ratio within a few hundredths of a target line is not settled by one
// run. The empty kernel's replay time drifts too (H200: 0.56 us for a process's first two
// shapes, 0.74 from the third on); scripts/bench_table.py gives the small-R
// ratios against both the same-shape empty kernel and the run's fastest.
//
// Which variant: the dispatcher's choice (for backward ops: the first product device variant,
// in registry order, that accepts the args with its workspace allocated), or every match of
// --variant. A shape no variant accepts still gets a row, "skipped: <reason>".
//
// --lab: the lecture's lab at one bf16 shape (Bench::run_lab): the eager 8-kernel chain and the
// plain fused kernel of lab_kernels.cuh beside ours and the copy, timed the same way.
#include <cuda_runtime.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "rmsnorm/plugins.h"
#include "rmsnorm/types.h"
#include "rmsnorm/validate.h"
#include "rmsnorm/dispatch.h"
#include "rmsnorm/variant.h"
#include "event_timing.cuh"
#include "lab_kernels.cuh"

namespace {

using rmsnorm::DType;
using rmsnorm::Op;


__global__ void empty_kernel() {}

// --prelude: a kernel launched once, on every SM, right before a variant's warm-up, to leave the
// SMs in the shared-memory / L1 split that another kernel would (a GEMM before the norm takes the
// most shared memory an SM has). max-smem: the largest opt-in dynamic shared memory a block may
// have; max-l1: no shared memory, the carveout preference set to the largest L1.
__global__ void prelude_smem_kernel(int* sink) {
  extern __shared__ int prelude_buf[];
  prelude_buf[threadIdx.x] = static_cast<int>(threadIdx.x);
  __syncthreads();
  if (prelude_buf[31 - threadIdx.x] < 0) *sink = 1;  // never true: keeps the store
}
__global__ void prelude_l1_kernel(int* sink) {
  if (threadIdx.x > 1024) *sink = 1;
}

// Deterministic fill: 16-bit patterns of moderate values for f16/bf16, small floats for f32,
// a constant for FP8 outputs (never read).
__global__ void fill_kernel(void* p, std::size_t n, int elem, std::uint32_t salt) {
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::size_t>(gridDim.x) * blockDim.x) {
    std::uint32_t h = static_cast<std::uint32_t>(i) * 2654435761u ^ salt;
    h ^= h >> 15;
    if (elem == 4) {
      static_cast<float*>(p)[i] = static_cast<float>(static_cast<int>(h % 2001u) - 1000) / 512.0f;
    } else if (elem == 2) {
      // bf16: exponent 118..130, f16: exponent 10..18 — both modest magnitudes.
      const std::uint16_t sign = static_cast<std::uint16_t>((h >> 20) & 1u) << 15;
      static_cast<std::uint16_t*>(p)[i] = static_cast<std::uint16_t>(sign | (0x3c00u + (h & 0x7ffu)) % 0x4800u);
    } else {
      static_cast<unsigned char*>(p)[i] = 0;
    }
  }
}

void fill(void* p, std::size_t bytes, int elem, std::uint32_t salt) {
  const std::size_t n = bytes / static_cast<std::size_t>(elem);
  fill_kernel<<<1024, 256>>>(p, n, elem, salt);
  BENCH_CUDA(cudaGetLastError());
}

// Device memory for the bench's buffers. By default (--alloc cache) it stays allocated between
// shapes, as a caching allocator keeps it (PyTorch's does): a freed block goes back to a list, and
// a request takes the smallest listed block of its size to twice it (none: a new cudaMalloc); a
// cudaMalloc that fails frees the listed blocks and tries once more.
// Why: with a cudaMalloc / cudaFree per buffer (--alloc fresh), a shape measured right after a
// larger shape's buffers were freed runs 10-24 % slower, the copy beside it up to 11 %, for the
// next shape or two in the same process (H200; not the SMs' shared memory / L1 split: --prelude
// does not change it), so a figure would depend on the shape before it. Why the factor of two:
// without it small buffers land in large blocks and small-R shapes move by 4-10 %; where a
// buffer lies matters, so it should lie where a buffer of its size would.
class Pool {
 public:
  static Pool& get() {
    static Pool pool;
    return pool;
  }
  bool caching = true;
  void* take(std::size_t b) {
    if (caching) {
      const auto it = free_.lower_bound(b);
      if (it != free_.end() && it->first / 2 <= b) {
        void* p = it->second;
        free_.erase(it);
        return p;
      }
    }
    void* p = nullptr;
    if (cudaMalloc(&p, b) != cudaSuccess) {
      (void)cudaGetLastError();
      release();
      BENCH_CUDA(cudaMalloc(&p, b));
    }
    sizes_[p] = b;
    return p;
  }
  void give(void* p) {
    if (!caching) {
      sizes_.erase(p);
      cudaFree(p);
      return;
    }
    free_.emplace(sizes_.at(p), p);
  }
  void release() {
    for (const auto& f : free_) {
      sizes_.erase(f.second);
      cudaFree(f.second);
    }
    free_.clear();
  }

 private:
  std::multimap<std::size_t, void*> free_;     // listed blocks by size
  std::map<const void*, std::size_t> sizes_;  // every block this pool allocated
};

struct DeviceBuffer {
  void* p = nullptr;
  std::size_t bytes = 0;
  explicit DeviceBuffer(std::size_t b) : bytes(b) {
    if (b) p = Pool::get().take(b);
  }
  ~DeviceBuffer() {
    if (p) Pool::get().give(p);
  }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
};

struct Options {
  bool quick = false;
  std::string prelude = "none";  // none | max-smem | max-l1 (the SMs' carveout before each variant)
  bool fresh_alloc = false;      // --alloc fresh: cudaMalloc / cudaFree per buffer (Pool)
  std::string variant;  // glob; empty: the dispatcher's choice
  std::vector<std::string> ops;
  std::vector<std::int64_t> rows, dims;
  std::vector<DType> dtypes;
  std::string csv;
  int iters = 50;
  // A few fp16/fp32 shapes beside the bf16 sweep: only in the default sweep (an explicit
  // --rows/--dims/--dtype, --quick or --no-extra drops them, so that the launches are exactly
  // the requested ones: Nsight Compute's --launch-skip counts on that).
  bool extra_dtypes = true;
  // Backward ops without dg (dx only, as for frozen weights): no partials, no column sum, and
  // none of their bytes in the model. Shows what the dg stages cost at a shape.
  bool no_dg = false;
  // FP8 ops: the scale modes (--quant), each timed as an op of its own: dynamic per token (op
  // forward_quant), static (a given scale of 1: forward_quant.static) or per block of 128 columns
  // (forward_quant.block). Empty: per token, and in the default sweep the FP8 forward per block too.
  std::vector<rmsnorm::Quant> quants;
  // --lab: the lecture's eager chain, plain fused kernel and ours at one shape (Bench::run_lab).
  bool lab = false, json = false;
};

// A comma-separated list of non-negative integers ("1,16,64"); anything else ends the program
// with a message naming the bad item (strtoll alone read "4k" as 4 and "x" as 0).
std::vector<std::int64_t> parse_list(const char* s, const char* what) {
  std::vector<std::int64_t> v;
  for (const char* p = s;;) {
    char* end = nullptr;
    errno = 0;
    const long long x = std::strtoll(p, &end, 10);
    if (end == p || errno != 0 || x < 0 || (*end != ',' && *end != '\0')) {
      std::fprintf(stderr, "bad %s list '%s': expected non-negative integers separated by commas\n", what, s);
      std::exit(1);
    }
    v.push_back(x);
    if (*end == '\0') break;
    p = end + 1;
  }
  return v;
}

std::vector<std::string> split(const std::string& s) {
  std::vector<std::string> out;
  std::size_t a = 0;
  while (a <= s.size()) {
    const std::size_t b = s.find(',', a);
    out.push_back(s.substr(a, b == std::string::npos ? std::string::npos : b - a));
    if (b == std::string::npos) break;
    a = b + 1;
  }
  return out;
}

void usage() {
  std::printf(
      "rmsnorm-bench [options]\n"
      "  --quick              a small sweep (R in {1,64,8192}, D in {128,4096,8192})\n"
      "  --variant GLOBS      benchmark every variant matching one of GLOBS, comma-separated\n"
      "                       (default: the dispatcher's pick)\n"
      "  --op LIST            forward,add_forward,forward_quant,add_forward_quant,backward,add_backward\n"
      "  --rows LIST          e.g. 1,16,64,512,4096,8192,32768\n"
      "  --dims LIST          e.g. 128,1025,2048,4096,5120,8192,16384,65536\n"
      "  --dtype LIST         bf16,f16,f32 (default bf16 plus a few f16/f32 shapes)\n"
      "  --no-extra           no extra f16/f32 shapes (implied by --rows, --dims, --dtype, --quick)\n"
      "  --no-dg              backward ops: dx only (no dg, no workspace; the bytes model drops the partials)\n"
      "  --quant LIST         FP8 ops' scales, each timed as an op of its own: token (dynamic per token,\n"
      "                       op forward_quant), static (a given 1: forward_quant.static), block (per\n"
      "                       block of 128 columns: forward_quant.block); default token, and in the\n"
      "                       default sweep the FP8 forward per block too\n"
      "  --iters N            timed repetitions per measurement (median; default 50)\n"
      "  --alloc cache|fresh  device buffers kept between shapes and reused (cache, the default) or\n"
      "                       a cudaMalloc / cudaFree per buffer (fresh: a shape right after a larger\n"
      "                       one then ran up to 24 %% slower on the H200)\n"
      "  --prelude KIND       before each variant's warm-up, one kernel on every SM that leaves its\n"
      "                       shared memory / L1 split as another kernel would: none (default),\n"
      "                       max-smem (the most shared memory a block may have, as a GEMM) or max-l1\n"
      "  --csv PATH           also write the table as CSV, a row as each is measured (an interrupted\n"
      "                       run keeps the rows it measured)\n"
      "rmsnorm-bench --lab [--rows R] [--dims D] [--iters N] [--json]\n"
      "  the lecture's lab on bf16 rows (default R = 4096, D = 8192): the eager 8-kernel chain of\n"
      "  LlamaRMSNorm (36 bytes per element), a plain fused kernel and ours (4 bytes), each against a\n"
      "  same-run copy of 4 bytes per element, and whether their y agree within one bf16 ulp (exit 1\n"
      "  when not); --json prints one JSON object\n");
}

struct Result {
  std::string op, dtype, variant, note;
  std::int64_t rows = 0, dim = 0;
  double bytes = 0, us = 0, copy_us = 0, empty_us = -1;
  bool graph = false;
};

bool is_forward_op(Op op) {
  return op == Op::forward || op == Op::add_forward || op == Op::forward_quant || op == Op::add_forward_quant;
}

bool is_quant_op(Op op) { return op == Op::forward_quant || op == Op::add_forward_quant; }

// The op column of a row: the op's name, and for an FP8 op whose scale is not per token, the
// scale mode after a dot (forward_quant.block, add_forward_quant.static).
std::string op_label(Op op, rmsnorm::Quant q) {
  std::string s = rmsnorm::to_string(op);
  if (is_quant_op(op) && q == rmsnorm::Quant::per_block) s += ".block";
  if (is_quant_op(op) && q == rmsnorm::Quant::static_scale) s += ".static";
  return s;
}

double model_bytes(Op op, std::int64_t R, std::int64_t D, std::size_t xs, std::size_t ws) {
  const double rd = static_cast<double>(R) * static_cast<double>(D);
  switch (op) {
    case Op::forward: return rd * 2 * xs;
    case Op::add_forward: return rd * 4 * xs;
    case Op::forward_quant: return rd * (xs + 1);
    case Op::add_forward_quant: return rd * (3 * xs + 1);
    case Op::backward: return rd * 3 * xs + static_cast<double>(ws);
    default: return rd * 4 * xs + static_cast<double>(ws);
  }
}

// The largest distance between two bf16 outputs, element by element, in ulps (the steps between
// them in the ordered list of bf16 values; +0 and -0 are one value). A NaN counts as 65536.
int max_ulp(const std::vector<std::uint16_t>& a, const std::vector<std::uint16_t>& b) {
  auto ordered = [](std::uint16_t u) { return (u & 0x8000u) ? -static_cast<int>(u & 0x7fffu) : static_cast<int>(u); };
  auto is_nan = [](std::uint16_t u) { return (u & 0x7fffu) > 0x7f80u; };
  int m = 0;
  for (std::size_t i = 0; i < a.size(); ++i)
    m = std::max(m, is_nan(a[i]) || is_nan(b[i]) ? 65536 : std::abs(ordered(a[i]) - ordered(b[i])));
  return m;
}

// `s` as the inside of a JSON string.
std::string json_text(const std::string& s) {
  std::string out;
  for (const char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    if (static_cast<unsigned char>(c) >= 0x20) out += c;
  }
  return out;
}

class Bench {
 public:
  explicit Bench(Options o) : opt_(std::move(o)) {
    int dev = 0;
    BENCH_CUDA(cudaGetDevice(&dev));
    BENCH_CUDA(cudaDeviceGetAttribute(&l2_, cudaDevAttrL2CacheSize, dev));
    cudaDeviceProp prop{};
    BENCH_CUDA(cudaGetDeviceProperties(&prop, dev));
    device_ = prop.name;
    BENCH_CUDA(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
  }
  ~Bench() {
    close_csv();
    cudaStreamDestroy(stream_);
  }

  void run_shape(Op op, DType t, std::int64_t R, std::int64_t D, rmsnorm::Quant qmode) {
    const std::size_t xs = rmsnorm::size_of(t);
    const bool quant = is_quant_op(op);
    const bool add = rmsnorm::has_residual(op);
    const DType yt = quant ? DType::e4m3 : t;
    const std::size_t act = static_cast<std::size_t>(R * D) * xs;
    const std::size_t out = static_cast<std::size_t>(R * D) * rmsnorm::size_of(yt);
    // Bytes of one buffer set (what a call touches apart from g, rstd, scales, dg and the
    // workspace, which are shared), and enough sets that the rotation exceeds 2× L2.
    //   forward ops:  x [+ o] + y          backward ops:  x + dy + dx [+ dresidual]
    const std::size_t per_set = is_forward_op(op) ? act * (add ? 2 : 1) + out : act * (add ? 4 : 3);
    const int sets = rotation_sets(per_set);
    struct Set {
      std::unique_ptr<DeviceBuffer> x, o, y, dy, dres, ws;
    };
    std::vector<Set> bufs(static_cast<std::size_t>(sets));
    DeviceBuffer g(static_cast<std::size_t>(D) * xs), rstd(static_cast<std::size_t>(R) * 4),
        scale(static_cast<std::size_t>(R * rmsnorm::quant_groups(D)) * 4), dg(static_cast<std::size_t>(D) * 4);
    fill(g.p, g.bytes, static_cast<int>(xs), 7);
    {
      const std::vector<float> ones(static_cast<std::size_t>(R), 1.0f);  // the backward's given r
      BENCH_CUDA(cudaMemcpy(rstd.p, ones.data(), rstd.bytes, cudaMemcpyHostToDevice));
      BENCH_CUDA(cudaMemcpy(scale.p, ones.data(), 4, cudaMemcpyHostToDevice));  // a static FP8 scale
    }
    for (int k = 0; k < sets; ++k) {
      Set& s = bufs[static_cast<std::size_t>(k)];
      s.x = std::make_unique<DeviceBuffer>(act);
      fill(s.x->p, act, static_cast<int>(xs), 11u + static_cast<std::uint32_t>(k));
      if (is_forward_op(op)) {
        if (add) {
          s.o = std::make_unique<DeviceBuffer>(act);
          fill(s.o->p, act, static_cast<int>(xs), 101u + static_cast<std::uint32_t>(k));
        }
        s.y = std::make_unique<DeviceBuffer>(out);
      } else {
        s.dy = std::make_unique<DeviceBuffer>(act);
        fill(s.dy->p, act, static_cast<int>(xs), 201u + static_cast<std::uint32_t>(k));
        s.y = std::make_unique<DeviceBuffer>(act);  // dx
        if (add) {
          s.dres = std::make_unique<DeviceBuffer>(act);
          fill(s.dres->p, act, static_cast<int>(xs), 301u + static_cast<std::uint32_t>(k));
        }
      }
    }
    // The fills and the copies above are on the legacy stream, which stream_ (non-blocking) does
    // not wait for: finish them before the first call reads its inputs.
    BENCH_CUDA(cudaDeviceSynchronize());
    auto fwd_args = [&](int k) {
      Set& s = bufs[static_cast<std::size_t>(k)];
      rmsnorm::ForwardArgs a;
      a.rows = R;
      a.dim = D;
      a.x = {s.x->p, t, D};
      if (add) a.o = {s.o->p, t, D};
      a.y = {s.y->p, yt, D};
      a.g = g.p;
      a.g_type = t;
      a.rstd = static_cast<float*>(rstd.p);
      a.eps = 1e-6f;
      a.quant = quant ? qmode : rmsnorm::Quant::none;
      a.scale = quant ? static_cast<float*>(scale.p) : nullptr;
      a.stream = stream_;
      return a;
    };
    auto bwd_args = [&](int k, const rmsnorm::Variant* v, void* ws, std::size_t wsb) {
      Set& s = bufs[static_cast<std::size_t>(k)];
      rmsnorm::BackwardArgs a;
      a.rows = R;
      a.dim = D;
      a.x = {s.x->p, t, D};
      a.dy = {s.dy->p, t, D};
      a.dx = {s.y->p, t, D};
      if (add) a.dresidual = {s.dres->p, t, D};
      a.g = g.p;
      a.g_type = t;
      a.rstd = static_cast<const float*>(rstd.p);
      a.dg = opt_.no_dg ? nullptr : dg.p;
      a.dg_type = DType::f32;
      a.workspace = ws;
      a.workspace_bytes = wsb;
      a.stream = stream_;
      (void)v;
      return a;
    };

    const bool graph = R <= 64;
    auto result_row = [&](const std::string& variant) {
      Result r;
      r.op = op_label(op, qmode);
      r.dtype = rmsnorm::to_string(t);
      r.variant = variant;
      r.rows = R;
      r.dim = D;
      r.graph = graph;
      return r;
    };

    // Which variants: the dispatcher's pick, or every match of --variant.
    std::vector<const rmsnorm::Variant*> variants;
    if (opt_.variant.empty()) {
      std::string refusal;
      const rmsnorm::Variant* v = nullptr;
      if (is_forward_op(op)) {
        v = rmsnorm::pick_forward(fwd_args(0), rmsnorm::Memory::device);
        if (!v) refusal = forward_refusal(op, fwd_args(0));
      } else {
        v = pick_backward_with_workspace(op, R, D, bwd_args, refusal);
      }
      if (!v) {
        Result r = result_row("-");
        r.note = "skipped: " + refusal;
        record(r);
        return;
      }
      variants.push_back(v);
    } else {
      for (const rmsnorm::Variant& v : rmsnorm::registry())
        if (v.memory == rmsnorm::Memory::device && v.supports(op) && rmsnorm::glob_match(opt_.variant, v.name))
          variants.push_back(&v);
    }
    for (const rmsnorm::Variant* v : variants) {
      Result r = result_row(v->name);
      std::size_t wsb = 0;
      if (!is_forward_op(op) && v->workspace_bytes && !opt_.no_dg) wsb = v->workspace_bytes(R, D);
      DeviceBuffer ws(wsb);
      rmsnorm::Status st;
      if (is_forward_op(op)) {
        st = v->can_implement_forward(fwd_args(0));
      } else {
        st = v->can_implement_backward(bwd_args(0, v, ws.p, wsb));
      }
      if (!st.ok()) {
        r.note = std::string("skipped: ") + st.reason;
        record(r);
        continue;
      }
      r.bytes = model_bytes(op, R, D, xs, wsb);
      auto launch = [&](int k) {
        const rmsnorm::Status s = is_forward_op(op) ? v->run_forward(fwd_args(k)) : v->run_backward(bwd_args(k, v, ws.p, wsb));
        if (!s.ok()) {
          std::fprintf(stderr, "%s failed: %s\n", v->name.c_str(), s.reason.c_str());
          std::exit(2);
        }
      };
      run_prelude();
      r.us = time_us(launch, sets, opt_.iters, graph, stream_);
      r.copy_us = copy_us(r.bytes, graph);
      if (graph) {
        r.empty_us = time_us([&](int) { empty_kernel<<<1, 32, 0, stream_>>>(); }, 1, opt_.iters, true, stream_);
      }
      BENCH_CUDA(cudaStreamSynchronize(stream_));
      BENCH_CUDA(cudaGetLastError());
      record(r);
    }
  }

  // Enough buffer sets of `per_set` bytes that a rotation through them exceeds 2× the L2 (at most 64).
  int rotation_sets(std::size_t per_set) const {
    return static_cast<int>(
        std::clamp<std::size_t>((2 * static_cast<std::size_t>(l2_)) / std::max<std::size_t>(per_set, 1) + 1, 1, 64));
  }

  // The time of a copy of `bytes` (half read, half written), through its own buffer rotation.
  double copy_us(double bytes, bool graph) {
    const std::size_t copy_bytes = static_cast<std::size_t>(bytes / 2) / 16 * 16;
    std::vector<std::unique_ptr<DeviceBuffer>> src, dst;
    const int csets = rotation_sets(2 * copy_bytes);
    for (int k = 0; k < csets; ++k) {
      src.push_back(std::make_unique<DeviceBuffer>(copy_bytes));
      dst.push_back(std::make_unique<DeviceBuffer>(copy_bytes));
    }
    return time_us(
        [&](int k) {
          BENCH_CUDA(cudaMemcpyAsync(dst[static_cast<std::size_t>(k)]->p, src[static_cast<std::size_t>(k)]->p,
                                     copy_bytes, cudaMemcpyDeviceToDevice, stream_));
        },
        csets, opt_.iters, graph, stream_);
  }

  // Launches of one call: the nodes of a CUDA graph captured from it.
  template <typename F>
  std::size_t launches_of(F&& launch) {
    cudaGraph_t g = nullptr;
    BENCH_CUDA(cudaStreamBeginCapture(stream_, cudaStreamCaptureModeThreadLocal));
    launch(0);
    BENCH_CUDA(cudaStreamEndCapture(stream_, &g));
    std::size_t nodes = 0;
    BENCH_CUDA(cudaGraphGetNodes(g, nullptr, &nodes));
    BENCH_CUDA(cudaGraphDestroy(g));
    return nodes;
  }

  // --prelude: one launch on every SM, then a synchronization (the variant's warm-up follows).
  void run_prelude() {
    if (opt_.prelude == "none") return;
    int dev = 0, sms = 0, smem = 0;
    BENCH_CUDA(cudaGetDevice(&dev));
    BENCH_CUDA(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev));
    BENCH_CUDA(cudaDeviceGetAttribute(&smem, cudaDevAttrMaxSharedMemoryPerBlockOptin, dev));
    DeviceBuffer sink(sizeof(int));
    if (opt_.prelude == "max-smem") {
      BENCH_CUDA(cudaFuncSetAttribute(prelude_smem_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
      prelude_smem_kernel<<<sms, 32, static_cast<std::size_t>(smem), stream_>>>(static_cast<int*>(sink.p));
    } else {
      BENCH_CUDA(cudaFuncSetAttribute(prelude_l1_kernel, cudaFuncAttributePreferredSharedMemoryCarveout, cudaSharedmemCarveoutMaxL1));
      prelude_l1_kernel<<<sms, 32, 0, stream_>>>(static_cast<int*>(sink.p));
    }
    BENCH_CUDA(cudaGetLastError());
    BENCH_CUDA(cudaStreamSynchronize(stream_));
  }

  // A row of the table: printed, and appended to the CSV.
  void record(const Result& r) {
    print(r);
    if (!csv_) return;
    const bool ok = r.note.empty();
    std::fprintf(csv_, "\"%s\",%s,%s,%lld,%lld,%s,%.0f,%.3f,%.1f,%.3f,%.1f,%.4f,%d,%.3f,%.3f,\"%s\"\n", device_.c_str(),
                 r.op.c_str(), r.dtype.c_str(), static_cast<long long>(r.rows), static_cast<long long>(r.dim),
                 r.variant.c_str(), r.bytes, r.us, ok ? r.bytes / (r.us * 1e3) : 0.0, r.copy_us,
                 ok ? r.bytes / (r.copy_us * 1e3) : 0.0, ok ? r.copy_us / r.us : 0.0, r.graph ? 1 : 0, r.empty_us,
                 r.empty_us > 0 ? r.us / r.empty_us : 0.0, r.note.c_str());
    std::fflush(csv_);
  }

  // A shape not run at all (e.g. it does not fit in device memory) still gets its row.
  void skip(Op op, DType t, std::int64_t R, std::int64_t D, rmsnorm::Quant qmode, const std::string& reason) {
    Result r;
    r.op = op_label(op, qmode);
    r.dtype = rmsnorm::to_string(t);
    r.variant = opt_.variant.empty() ? "-" : opt_.variant;
    r.rows = R;
    r.dim = D;
    r.note = "skipped: " + reason;
    record(r);
  }

  // True when --variant is not given or matches a device variant implementing `op`.
  bool has_variant_for(Op op) const {
    if (opt_.variant.empty()) return true;
    for (const rmsnorm::Variant& v : rmsnorm::registry())
      if (v.memory == rmsnorm::Memory::device && v.supports(op) && rmsnorm::glob_match(opt_.variant, v.name)) return true;
    return false;
  }

  // --lab: the lecture's eager chain, its plain fused kernel and ours (the dispatcher's forward)
  // on bf16 [R, D] rows with bf16 weights, y = x·r·g, next to a copy of the useful bytes (read x,
  // write y: 4 per element). x and y rotate over buffer sets as in run_shape; the eager chain's
  // intermediates are one set, reused by every call as a caching allocator's blocks are.
  // Exit 0, or 1 when the three disagree by more than one bf16 ulp.
  int run_lab(std::int64_t R, std::int64_t D, bool json) {
    const std::size_t n = static_cast<std::size_t>(R) * static_cast<std::size_t>(D);
    const std::size_t act = n * 2;
    const float eps = 1e-6f;
    const bool graph = R <= 64;
    const int sets = rotation_sets(2 * act);
    {
      std::size_t free_b = 0, total_b = 0;
      BENCH_CUDA(cudaMemGetInfo(&free_b, &total_b));
      // x and y per set, the copy's as many again, fp32 x32, sq and xn, bf16 xn16 and the check's y.
      const double need = static_cast<double>(n) * (8.0 * sets + 16);
      if (need > 0.8 * static_cast<double>(free_b)) {
        std::fprintf(stderr, "rmsnorm-bench --lab: R = %lld, D = %lld needs ~%.1f GiB, %.1f GiB free\n",
                     static_cast<long long>(R), static_cast<long long>(D), need / 1073741824.0,
                     static_cast<double>(free_b) / 1073741824.0);
        return 1;
      }
    }
    std::vector<std::unique_ptr<DeviceBuffer>> xs, ys;
    for (int k = 0; k < sets; ++k) {
      xs.push_back(std::make_unique<DeviceBuffer>(act));
      fill(xs.back()->p, act, 2, 11u + static_cast<std::uint32_t>(k));
      ys.push_back(std::make_unique<DeviceBuffer>(act));
    }
    DeviceBuffer g(static_cast<std::size_t>(D) * 2), x32(n * 4), sq(n * 4), xn(n * 4), xn16(act),
        var(static_cast<std::size_t>(R) * 4), r(static_cast<std::size_t>(R) * 4), y_check(act);
    fill(g.p, g.bytes, 2, 7);
    BENCH_CUDA(cudaDeviceSynchronize());  // the fills run on the legacy stream, the methods on stream_
    lab::EagerScratch scratch{};
    scratch.x32 = static_cast<float*>(x32.p);
    scratch.sq = static_cast<float*>(sq.p);
    scratch.xn = static_cast<float*>(xn.p);
    scratch.var = static_cast<float*>(var.p);
    scratch.r = static_cast<float*>(r.p);
    scratch.xn16 = static_cast<__nv_bfloat16*>(xn16.p);
    const auto* gb = static_cast<const __nv_bfloat16*>(g.p);
    auto ours_args = [&](const void* x, void* y) {
      rmsnorm::ForwardArgs a;
      a.rows = R;
      a.dim = D;
      a.x = {const_cast<void*>(x), DType::bf16, D};
      a.y = {y, DType::bf16, D};
      a.g = g.p;
      a.g_type = DType::bf16;
      a.eps = eps;
      a.stream = stream_;
      return a;
    };
    const rmsnorm::Variant* ours = rmsnorm::pick_forward(ours_args(xs[0]->p, ys[0]->p), rmsnorm::Memory::device);
    if (!ours) {
      std::fprintf(stderr, "rmsnorm-bench --lab: %s\n",
                   forward_refusal(Op::forward, ours_args(xs[0]->p, ys[0]->p)).c_str());
      return 1;
    }
    struct Method {
      const char* name;
      double bytes_per_element;
      std::function<void(const void* x, void* y)> run;
      double us = 0;
      std::size_t launches = 0;
    };
    std::vector<Method> methods = {
        {"eager", 36,
         [&](const void* x, void* y) {
           lab::eager_forward(static_cast<const __nv_bfloat16*>(x), gb, static_cast<__nv_bfloat16*>(y), R, D, eps,
                              scratch, stream_);
           BENCH_CUDA(cudaGetLastError());
         }},
        {"fused", 4,
         [&](const void* x, void* y) {
           lab::fused_forward(static_cast<const __nv_bfloat16*>(x), gb, static_cast<__nv_bfloat16*>(y), R, D, eps,
                              stream_);
           BENCH_CUDA(cudaGetLastError());
         }},
        {"ours", 4,
         [&](const void* x, void* y) {
           const rmsnorm::Status s = ours->run_forward(ours_args(x, y));
           if (!s.ok()) {
             std::fprintf(stderr, "%s failed: %s\n", ours->name.c_str(), s.reason.c_str());
             std::exit(2);
           }
         }},
    };
    // The check: every method on the first set's x, its y copied back.
    std::vector<std::vector<std::uint16_t>> out(methods.size(), std::vector<std::uint16_t>(n));
    for (std::size_t m = 0; m < methods.size(); ++m) {
      methods[m].run(xs[0]->p, y_check.p);
      BENCH_CUDA(cudaStreamSynchronize(stream_));
      BENCH_CUDA(cudaMemcpy(out[m].data(), y_check.p, act, cudaMemcpyDeviceToHost));
    }
    const int ulp_ef = max_ulp(out[0], out[1]), ulp_eo = max_ulp(out[0], out[2]), ulp_fo = max_ulp(out[1], out[2]);
    const bool agree = ulp_ef <= 1 && ulp_eo <= 1 && ulp_fo <= 1;
    for (Method& m : methods) {
      auto launch = [&](int k) { m.run(xs[static_cast<std::size_t>(k)]->p, ys[static_cast<std::size_t>(k)]->p); };
      m.launches = launches_of(launch);
      run_prelude();
      m.us = time_us(launch, sets, opt_.iters, graph, stream_);
    }
    const double copy = copy_us(4.0 * static_cast<double>(n), graph);
    BENCH_CUDA(cudaStreamSynchronize(stream_));
    BENCH_CUDA(cudaGetLastError());
    methods.push_back({"copy", 4, nullptr, copy, 1});

    // Effective bandwidth: the useful 4 bytes per element over the time; moved: the modelled bytes.
    auto tbps = [&](double bytes_per_element, double us) {
      return bytes_per_element * static_cast<double>(n) / (us * 1e6);
    };
    if (json) {
      std::printf(
          "{\"device\":\"%s\",\"l2_mib\":%d,\"rows\":%lld,\"dim\":%lld,\"dtype\":\"bf16\",\"eps\":%g,\"iters\":%d,"
          "\"graph\":%s,\"sets\":%d,\"variant\":\"%s\",\"methods\":[",
          json_text(device_).c_str(), l2_ >> 20, static_cast<long long>(R), static_cast<long long>(D), eps, opt_.iters,
          graph ? "true" : "false", sets, json_text(ours->name).c_str());
      for (std::size_t i = 0; i < methods.size(); ++i) {
        const Method& m = methods[i];
        std::printf(
            "%s{\"name\":\"%s\",\"launches\":%zu,\"bytes_per_element\":%g,\"time_us\":%.3f,\"tbps\":%.4f,"
            "\"pct_of_copy\":%.2f,\"moved_tbps\":%.4f}",
            i ? "," : "", m.name, m.launches, m.bytes_per_element, m.us, tbps(4, m.us), 100 * copy / m.us,
            tbps(m.bytes_per_element, m.us));
      }
      std::printf("],\"max_ulp\":{\"eager_fused\":%d,\"eager_ours\":%d,\"fused_ours\":%d},\"agree\":%s}\n", ulp_ef,
                  ulp_eo, ulp_fo, agree ? "true" : "false");
    } else {
      std::printf("device: %s, L2 %d MiB; R = %lld, D = %lld, bf16 x and weights, y = x*r*g, eps %g\n", device_.c_str(),
                  l2_ >> 20, static_cast<long long>(R), static_cast<long long>(D), eps);
      std::printf("%-6s %8s %7s %10s %7s %7s %10s\n", "method", "launches", "B/elem", "time_us", "TB/s", "%copy",
                  "moved TB/s");
      for (const Method& m : methods) {
        std::printf("%-6s %8zu %7g %10.2f %7.3f %7.1f %10.3f", m.name, m.launches, m.bytes_per_element, m.us,
                    tbps(4, m.us), 100 * copy / m.us, tbps(m.bytes_per_element, m.us));
        if (std::string(m.name) == "ours") std::printf("  %s", ours->name.c_str());
        std::printf("\n");
      }
      std::printf("agree: max bf16 ulp eager-fused %d, eager-ours %d, fused-ours %d (at most 1): %s\n", ulp_ef, ulp_eo,
                  ulp_fo, agree ? "PASS" : "FAIL");
    }
    return agree ? 0 : 1;
  }

  void header() const {
    std::printf("device: %s, L2 %d MiB\n", device_.c_str(), l2_ >> 20);
    std::printf("%-18s %-5s %6s %6s %-22s %10s %9s %9s %7s %9s %7s\n", "op", "dtype", "R", "D", "variant", "time_us",
                "GB/s", "copyGB/s", "ratio", "empty_us", "x_empty");
  }
  static void print(const Result& r) {
    if (!r.note.empty()) {
      std::printf("%-18s %-5s %6lld %6lld %-22s %s\n", r.op.c_str(), r.dtype.c_str(), static_cast<long long>(r.rows),
                  static_cast<long long>(r.dim), r.variant.c_str(), r.note.c_str());
      return;
    }
    const double bw = r.bytes / (r.us * 1e3), cbw = r.bytes / (r.copy_us * 1e3);
    std::printf("%-18s %-5s %6lld %6lld %-22s %10.2f %9.1f %9.1f %7.3f", r.op.c_str(), r.dtype.c_str(),
                static_cast<long long>(r.rows), static_cast<long long>(r.dim), r.variant.c_str(), r.us, bw, cbw,
                r.copy_us / r.us);
    if (r.empty_us > 0) std::printf(" %9.2f %7.2f", r.empty_us, r.us / r.empty_us);
    std::printf("\n");
    std::fflush(stdout);
  }
  // --csv: the header now, then each row as it is recorded (flushed), so that a run stopped by a
  // time limit keeps every row it measured. False when the file cannot be written.
  bool open_csv(const std::string& path) {
    csv_ = std::fopen(path.c_str(), "w");
    if (!csv_) return false;
    std::fprintf(csv_, "device,op,dtype,rows,dim,variant,bytes,time_us,gbps,copy_us,copy_gbps,ratio,graph,empty_us,x_empty,note\n");
    std::fflush(csv_);
    return true;
  }
  void close_csv() {
    if (csv_) std::fclose(csv_);
    csv_ = nullptr;
  }

 private:
  // Why pick_forward() found nothing: the contract's verdict, else the first candidate's refusal
  // (same order and filter as pick_forward: registry order, device products implementing op).
  static std::string forward_refusal(Op op, const rmsnorm::ForwardArgs& a) {
    const rmsnorm::Status valid = rmsnorm::validate(a);
    if (!valid.ok()) return "invalid arguments: " + valid.reason;
    for (const rmsnorm::Variant& v : rmsnorm::registry()) {
      if (v.is_mutant() || v.memory != rmsnorm::Memory::device || !v.supports(op) || !v.can_implement_forward) continue;
      const rmsnorm::Status st = v.can_implement_forward(a);
      if (!st.ok()) return v.name + ": " + st.reason;
    }
    return std::string("no device variant implements ") + rmsnorm::to_string(op);
  }

  // The dispatcher's backward choice as a real caller gets it, with its dg workspace.
  // pick_backward(args) asks every candidate with the workspace of `args`, and the size a
  // candidate needs is its own (Variant::workspace_bytes), so a caller without a workspace gets
  // nothing. Same order and filter as pick_backward: the contract's validation, then registry
  // order, products only, device variants implementing `op`, the dispatch table; each candidate is asked with
  // workspace_bytes(R, D) bytes actually allocated. On refusal: the first candidate's reason.
  template <typename MakeArgs>
  static const rmsnorm::Variant* pick_backward_with_workspace(Op op, std::int64_t R, std::int64_t D, MakeArgs& make_args,
                                                              std::string& refusal) {
    const rmsnorm::Status valid = rmsnorm::validate(make_args(0, nullptr, nullptr, 0));
    if (!valid.ok()) {
      refusal = "invalid arguments: " + valid.reason;
      return nullptr;
    }
    for (const rmsnorm::Variant& v : rmsnorm::registry()) {
      if (v.is_mutant() || v.memory != rmsnorm::Memory::device || !v.supports(op) || !v.can_implement_backward) continue;
      const std::size_t wsb = v.workspace_bytes ? v.workspace_bytes(R, D) : 0;
      const DeviceBuffer ws(wsb);
      const rmsnorm::BackwardArgs args = make_args(0, &v, ws.p, wsb);
      if (!rmsnorm::dispatch::prefers(v, rmsnorm::dispatch::query_of(args))) continue;
      const rmsnorm::Status st = v.can_implement_backward(args);
      if (st.ok()) return &v;
      if (refusal.empty()) refusal = v.name + ": " + st.reason;
    }
    if (refusal.empty()) refusal = std::string("no device variant implements ") + rmsnorm::to_string(op);
    return nullptr;
  }

  Options opt_;
  int l2_ = 0;
  std::string device_;
  cudaStream_t stream_{};
  FILE* csv_ = nullptr;
};

}  // namespace

int main(int argc, char** argv) {
  // Kernels of the plugins `rmsnorm-cert bench --plugin PATH` names (RMSNORM_PLUGINS), so that
  // --variant 'plugin.*' times them beside the copy like any built-in variant.
  std::string plugin_error;
  if (!rmsnorm::register_plugins_from_env(plugin_error)) {
    std::fprintf(stderr, "rmsnorm-bench: %s\n", plugin_error.c_str());
    return 3;
  }
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto next = [&]() -> const char* {
      if (i + 1 >= argc) {
        usage();
        std::exit(1);
      }
      return argv[++i];
    };
    if (a == "--quick") o.quick = true;
    else if (a == "--variant") o.variant = next();
    else if (a == "--op") o.ops = split(next());
    else if (a == "--rows") {
      o.rows = parse_list(next(), "--rows");
      o.extra_dtypes = false;
    } else if (a == "--dims") {
      o.dims = parse_list(next(), "--dims");
      o.extra_dtypes = false;
    } else if (a == "--no-extra") o.extra_dtypes = false;
    else if (a == "--dtype") {
      o.extra_dtypes = false;
      for (const std::string& s : split(next())) {
        DType t;
        if (!rmsnorm::parse(s, t)) { std::fprintf(stderr, "bad dtype %s\n", s.c_str()); return 1; }
        o.dtypes.push_back(t);
      }
    } else if (a == "--iters") o.iters = std::max(5, std::atoi(next()));
    else if (a == "--csv") o.csv = next();
    else if (a == "--lab") o.lab = true;
    else if (a == "--json") o.json = true;
    else if (a == "--no-dg") o.no_dg = true;
    else if (a == "--quant") {
      for (const std::string& q : split(next())) {
        if (q == "token") o.quants.push_back(rmsnorm::Quant::dynamic_token);
        else if (q == "static") o.quants.push_back(rmsnorm::Quant::static_scale);
        else if (q == "block") o.quants.push_back(rmsnorm::Quant::per_block);
        else {
          std::fprintf(stderr, "rmsnorm-bench: --quant takes token, static or block (comma-separated), not '%s'\n", q.c_str());
          return 1;
        }
      }
    }
    else if (a == "--alloc") {
      const std::string m = next();
      if (m != "cache" && m != "fresh") {
        std::fprintf(stderr, "bad --alloc %s (cache, fresh)\n", m.c_str());
        return 1;
      }
      o.fresh_alloc = m == "fresh";
    } else if (a == "--prelude") {
      o.prelude = next();
      if (o.prelude != "none" && o.prelude != "max-smem" && o.prelude != "max-l1") {
        std::fprintf(stderr, "bad --prelude %s (none, max-smem, max-l1)\n", o.prelude.c_str());
        return 1;
      }
    }
    else { usage(); return a == "--help" || a == "-h" ? 0 : 1; }
  }
  if (o.json && !o.lab) {
    std::fprintf(stderr, "rmsnorm-bench: --json goes with --lab\n");
    return 1;
  }
  auto one_count = [](const std::vector<std::int64_t>& v) {
    return v.empty() || (v.size() == 1 && v[0] >= 1 && v[0] < (std::int64_t{1} << 31));
  };
  if (o.lab && !(one_count(o.rows) && one_count(o.dims))) {
    std::fprintf(stderr, "rmsnorm-bench --lab: one --rows R and one --dims D, each in [1, 2^31)\n");
    return 1;
  }
  const rmsnorm::Status dev = rmsnorm::device_status();
  if (!dev.ok()) {
    if (o.lab) {
      std::fprintf(stderr, "rmsnorm-bench --lab: nothing timed: %s\n", dev.reason.c_str());
    } else {
      std::printf("no benchmark: %s\n", dev.reason.c_str());
    }
    return 77;
  }
  Pool::get().caching = !o.fresh_alloc;
  if (o.lab) return Bench(o).run_lab(o.rows.empty() ? 4096 : o.rows[0], o.dims.empty() ? 8192 : o.dims[0], o.json);
  // The default sweep: the small-R rows (graph replay) and R = 512-65536 against D = 1024-65536
  // with the odd widths 1025, 5121 and 8191 (docs/performance.md's targets are set over it).
  const bool untouched = !o.quick && o.rows.empty() && o.dims.empty() && o.dtypes.empty() && o.ops.empty();
  if (o.rows.empty())
    o.rows = o.quick ? std::vector<std::int64_t>{1, 64, 8192}
                     : std::vector<std::int64_t>{1, 16, 64, 512, 4096, 8192, 32768, 65536};
  if (o.dims.empty())
    o.dims = o.quick ? std::vector<std::int64_t>{128, 4096, 8192}
                     : std::vector<std::int64_t>{128, 1024, 1025, 2048, 4096, 5120, 5121, 8191, 8192, 16384, 32768, 65536};
  if (o.dtypes.empty()) o.dtypes = {DType::bf16};
  std::vector<Op> ops;
  if (o.ops.empty()) {
    ops = {Op::forward, Op::add_forward, Op::forward_quant, Op::add_forward_quant, Op::backward, Op::add_backward};
  } else {
    for (const std::string& s : o.ops) {
      Op op;
      if (!rmsnorm::parse(s, op)) { std::fprintf(stderr, "bad op %s\n", s.c_str()); return 1; }
      ops.push_back(op);
    }
  }
  // The scale modes of each FP8 op (one per row of the table).
  auto quants_of = [&](Op op) -> std::vector<rmsnorm::Quant> {
    if (!is_quant_op(op)) return {rmsnorm::Quant::none};
    if (!o.quants.empty()) return o.quants;
    if (untouched && op == Op::forward_quant) return {rmsnorm::Quant::dynamic_token, rmsnorm::Quant::per_block};
    return {rmsnorm::Quant::dynamic_token};
  };
  Bench b(o);
  if (!o.csv.empty() && !b.open_csv(o.csv)) {
    std::fprintf(stderr, "rmsnorm-bench: cannot write %s\n", o.csv.c_str());
    return 1;
  }
  b.header();
  std::size_t free_b = 0, total_b = 0;
  cudaMemGetInfo(&free_b, &total_b);
  for (Op op : ops) {
    if (!b.has_variant_for(op)) {
      std::printf("%-18s no device variant matching '%s' implements it\n", rmsnorm::to_string(op), o.variant.c_str());
      continue;
    }
    for (rmsnorm::Quant q : quants_of(op)) {
      for (DType t : o.dtypes)
        for (std::int64_t R : o.rows)
          for (std::int64_t D : o.dims) {
            const double need = static_cast<double>(R) * D * 4 * 4;  // worst case: fp32, 4 tensors
            if (need > 0.8 * static_cast<double>(free_b)) {
              char why[96];
              std::snprintf(why, sizeof why, "needs ~%.1f GiB, %.1f GiB free", need / 1073741824.0,
                            static_cast<double>(free_b) / 1073741824.0);
              b.skip(op, t, R, D, q, why);
              continue;
            }
            b.run_shape(op, t, R, D, q);
          }
      if (o.extra_dtypes && !o.quick) {
        for (DType t : {DType::f16, DType::f32})
          for (std::int64_t D : {4096, 8192}) b.run_shape(op, t, 8192, D, q);
      }
    }
  }
  b.close_csv();
  return 0;
}
