// Calls that feed each other, launched back to back (docs/launch-forms.md#programmatic-dependent-launch).
// Every kernel of the library may be launched while the kernel ahead of it in the stream is still
// running (programmatic dependent launch), and reads nothing before that kernel has completed.
// Here each call's input is the previous call's output, or the buffer the previous call is still
// reading is the one the next call writes (the fused add's residual in place, the backward's dg
// workspace), and the calls go out with no synchronisation between them. A kernel that touched
// memory before its wait would read a half-written input or overwrite one still being read: its
// outputs would differ from those of the same chain run one call at a time (a synchronisation
// after each, so nothing overlaps). Every output of every call is compared bit for bit.
#include <cstdint>
#include <cstring>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "harness/catch.h"
#include "rmsnorm/variant.h"

#if RMSNORM_HAVE_CUDA
#include <cuda_runtime.h>

namespace {

using rmsnorm::DType;
using rmsnorm::Op;
using rmsnorm::Quant;

constexpr int kCalls = 6;

std::size_t bytes_of(DType t) { return t == DType::f32 ? 4 : (t == DType::e4m3 || t == DType::e5m2) ? 1 : 2; }

// A device buffer filled from the host; its bytes read back for comparison.
struct Buffer {
  void* p = nullptr;
  std::size_t n = 0;
  explicit Buffer(std::size_t bytes) : n(bytes) { REQUIRE(cudaMalloc(&p, bytes == 0 ? 1 : bytes) == cudaSuccess); }
  ~Buffer() { cudaFree(p); }
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;
  // cudaMemcpy from pageable memory may return before its DMA has landed, and the chain's stream
  // (non-blocking) does not wait for the legacy stream: the device is synchronised before a call
  // can read the buffer.
  void fill(const std::vector<unsigned char>& h) {
    REQUIRE(cudaMemcpy(p, h.data(), n, cudaMemcpyHostToDevice) == cudaSuccess);
    REQUIRE(cudaDeviceSynchronize() == cudaSuccess);
  }
  std::vector<unsigned char> read() const {
    std::vector<unsigned char> h(n);
    REQUIRE(cudaMemcpy(h.data(), p, n, cudaMemcpyDeviceToHost) == cudaSuccess);
    return h;
  }
};

// n values of type t, uniform in [center - spread, center + spread], as raw bytes (bf16: the top
// half of the fp32).
std::vector<unsigned char> values(std::size_t n, DType t, float center, float spread, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> u(center - spread, center + spread);
  std::vector<unsigned char> out(n * bytes_of(t));
  for (std::size_t i = 0; i < n; ++i) {
    const float f = u(rng);
    std::uint32_t b;
    std::memcpy(&b, &f, 4);
    if (t == DType::f32) {
      std::memcpy(&out[i * 4], &b, 4);
    } else {
      const std::uint16_t h = static_cast<std::uint16_t>(b >> 16);
      std::memcpy(&out[i * 2], &h, 2);
    }
  }
  return out;
}

// A stream of its own; destroyed once all its work is done.
struct Stream {
  cudaStream_t s = nullptr;
  Stream() { REQUIRE(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking) == cudaSuccess); }
  ~Stream() {
    cudaStreamSynchronize(s);
    cudaStreamDestroy(s);
  }
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;
};

// Call k's status: false where v declines the case (nothing launched); any other failure fails the
// test. `serial`: the call is waited for before the next goes out.
bool called(const rmsnorm::Variant& v, int k, const rmsnorm::Status& st, cudaStream_t s, bool serial) {
  if (st.code == rmsnorm::Status::Code::unsupported || st.code == rmsnorm::Status::Code::misaligned) return false;
  INFO(v.name << " call " << k << ": " << st.reason);
  REQUIRE(st.ok());
  if (serial) REQUIRE(cudaStreamSynchronize(s) == cudaSuccess);
  return true;
}

// Runs kCalls forward-family calls of `v` (op: forward, add_forward, forward_quant or
// add_forward_quant), each reading what the call before wrote, synchronising after each call when
// `serial`. Returns false if v declines the case.
//   forward:            x_{k+1} = y_k (two buffers, swapped each call)
//   add_forward:        the residual x in place; o_{k+1} = y_k (two buffers, swapped)
//   add_forward_quant:  the residual x in place, o fixed; y and the per-token scales per call
//   forward_quant:      x_k = the dispatcher's plain forward of x_{k-1} (two buffers, swapped),
//                       written just before; y and the per-token scales per call
bool run_forward_chain(const rmsnorm::Variant& v, Op op, std::int64_t rows, std::int64_t dim, DType t, bool serial,
                       std::vector<std::vector<unsigned char>>& outputs) {
  const std::size_t n = static_cast<std::size_t>(rows * dim);
  const bool add = op == Op::add_forward || op == Op::add_forward_quant;
  const bool quant = op == Op::forward_quant || op == Op::add_forward_quant;
  Buffer a(n * bytes_of(t)), b(n * bytes_of(t)), g(static_cast<std::size_t>(dim) * bytes_of(t));
  a.fill(values(n, t, 0.0f, 2.0f, 11));
  b.fill(values(n, t, 0.0f, 2.0f, 12));
  g.fill(values(static_cast<std::size_t>(dim), t, 1.0f, 0.5f, 13));
  Buffer rstd(static_cast<std::size_t>(rows) * 4 * kCalls);
  Buffer y8(quant ? n * kCalls : 1), scale(quant ? static_cast<std::size_t>(rows) * 4 * kCalls : 1);
  Buffer o(add ? n * bytes_of(t) : 1);
  if (add) o.fill(values(n, t, 0.0f, 1.0f, 15));
  const Stream stream;
  cudaStream_t s = stream.s;

  const rmsnorm::Variant* producer = nullptr;
  bool ran = true;
  for (int k = 0; k < kCalls && ran; ++k) {
    rmsnorm::ForwardArgs f;
    f.rows = rows;
    f.dim = dim;
    f.g = g.p;
    f.g_type = t;
    f.eps = 1e-6f;
    f.stream = s;
    f.rstd = static_cast<float*>(rstd.p) + static_cast<std::int64_t>(k) * rows;
    void* in = k % 2 == 0 ? a.p : b.p;
    void* out = k % 2 == 0 ? b.p : a.p;
    if (op == Op::forward) {
      f.x = {in, t, dim};
      f.y = {out, t, dim};
    } else if (op == Op::add_forward) {
      f.x = {o.p, t, dim};  // the residual, in place
      f.o = {in, t, dim};
      f.y = {out, t, dim};
    } else {
      if (op == Op::forward_quant) {
        // x_k = the dispatcher's forward of the other buffer (x_{k-1}): a kernel of the library
        // writes what this call reads, new values every call, with no synchronisation between them.
        rmsnorm::ForwardArgs p;
        p.rows = rows;
        p.dim = dim;
        p.x = {out, t, dim};
        p.y = {in, t, dim};
        p.g = g.p;
        p.g_type = t;
        p.stream = s;
        if (producer == nullptr) producer = rmsnorm::pick_forward(p, rmsnorm::Memory::device);
        REQUIRE(producer != nullptr);
        REQUIRE(producer->run_forward(p).ok());
        f.x = {in, t, dim};
      } else {
        f.x = {a.p, t, dim};  // the residual, in place
        f.o = {o.p, t, dim};
      }
      f.y = {static_cast<unsigned char*>(y8.p) + static_cast<std::size_t>(k) * n, DType::e4m3, dim};
      f.quant = Quant::dynamic_token;
      f.scale = static_cast<float*>(scale.p) + static_cast<std::int64_t>(k) * rows;
    }
    ran = called(v, k, v.run_forward(f), s, serial);
  }
  REQUIRE(cudaStreamSynchronize(s) == cudaSuccess);
  if (!ran) return false;
  outputs = {a.read(), b.read(), rstd.read()};
  if (add) outputs.push_back(o.read());
  if (quant) {
    outputs.push_back(y8.read());
    outputs.push_back(scale.read());
  }
  return true;
}

// kCalls backward calls of `v`: dy_{k+1} = dx_k (two buffers, swapped), dg of every call kept,
// one dg workspace for all (a call's stage 1 rewrites what the call before's stage 2 reads);
// `add`: the fused-add backward, dresidual fixed.
bool run_backward_chain(const rmsnorm::Variant& v, bool add, std::int64_t rows, std::int64_t dim, DType t, bool serial,
                        std::vector<std::vector<unsigned char>>& outputs) {
  const std::size_t n = static_cast<std::size_t>(rows * dim);
  Buffer x(n * bytes_of(t)), a(n * bytes_of(t)), b(n * bytes_of(t)), g(static_cast<std::size_t>(dim) * bytes_of(t));
  x.fill(values(n, t, 0.0f, 2.0f, 21));
  a.fill(values(n, t, 0.0f, 1.0f, 22));
  b.fill(values(n, t, 0.0f, 1.0f, 23));
  g.fill(values(static_cast<std::size_t>(dim), t, 1.0f, 0.5f, 24));
  Buffer dres(add ? n * bytes_of(t) : 1);
  if (add) dres.fill(values(n, t, 0.0f, 0.25f, 25));
  // r of each row: any positive fp32 values serve (the backward takes r as given).
  std::vector<unsigned char> r(static_cast<std::size_t>(rows) * 4);
  for (std::int64_t i = 0; i < rows; ++i) {
    const float f = 0.5f + 0.001f * static_cast<float>(i % 97);
    std::memcpy(&r[static_cast<std::size_t>(i) * 4], &f, 4);
  }
  Buffer rstd(r.size());
  rstd.fill(r);
  Buffer dg(static_cast<std::size_t>(dim) * 4 * kCalls);
  const std::size_t ws_bytes = v.workspace_bytes ? v.workspace_bytes(rows, dim) : 0;
  Buffer ws(ws_bytes);
  const Stream stream;
  cudaStream_t s = stream.s;
  bool ran = true;
  for (int k = 0; k < kCalls && ran; ++k) {
    rmsnorm::BackwardArgs bw;
    bw.rows = rows;
    bw.dim = dim;
    bw.x = {x.p, t, dim};
    bw.dy = {k % 2 == 0 ? a.p : b.p, t, dim};
    bw.dx = {k % 2 == 0 ? b.p : a.p, t, dim};
    if (add) bw.dresidual = {dres.p, t, dim};
    bw.g = g.p;
    bw.g_type = t;
    bw.rstd = static_cast<const float*>(rstd.p);
    bw.dg = static_cast<float*>(dg.p) + static_cast<std::int64_t>(k) * dim;
    bw.dg_type = DType::f32;
    bw.workspace = ws_bytes ? ws.p : nullptr;
    bw.workspace_bytes = ws_bytes;
    bw.stream = s;
    ran = called(v, k, v.run_backward(bw), s, serial);
  }
  REQUIRE(cudaStreamSynchronize(s) == cudaSuccess);
  if (!ran) return false;
  outputs = {a.read(), b.read(), dg.read()};
  return true;
}

// The first byte at which two runs' outputs differ, described; empty when they are equal.
std::string first_difference(const std::vector<std::vector<unsigned char>>& x,
                             const std::vector<std::vector<unsigned char>>& y) {
  if (x.size() != y.size()) return "different output counts";
  for (std::size_t i = 0; i < x.size(); ++i)
    for (std::size_t j = 0; j < x[i].size(); ++j)
      if (x[i][j] != y[i][j]) {
        std::ostringstream m;
        m << "output " << i << " byte " << j << ": " << int(x[i][j]) << " back to back, " << int(y[i][j])
          << " one at a time";
        return m.str();
      }
  return {};
}

}  // namespace

TEST_CASE("chained calls launched back to back equal the same calls one at a time, bit for bit", "[gpu][chained]") {
  const Op ops[] = {Op::forward,           Op::add_forward, Op::forward_quant,
                    Op::add_forward_quant, Op::backward,    Op::add_backward};
  // Few rows (one short wave: the next launch overlaps most of the call), and several waves.
  const std::int64_t shapes[][2] = {{1, 1024},    {16, 4096},   {64, 128},   {64, 1025},  {64, 16384}, {4, 65536},
                                    {20000, 128}, {6000, 1024}, {800, 5121}, {600, 8192}, {100, 32768}};
  int chains = 0;
  for (const rmsnorm::Variant* v : rmsnorm::match_variants("all")) {
    if (v->memory != rmsnorm::Memory::device || v->is_mutant() || v->external) continue;
    for (const Op op : ops) {
      if (!v->supports(op)) continue;
      for (const DType t : {DType::bf16, DType::f32}) {
        for (const auto& sh : shapes) {
          const std::int64_t rows = sh[0], dim = sh[1];
          if (!v->declares(dim, t, op == Op::add_forward || op == Op::add_forward_quant || op == Op::add_backward))
            continue;
          std::vector<std::vector<unsigned char>> overlapped, serial;
          const bool bwd = op == Op::backward || op == Op::add_backward;
          const bool add = op == Op::add_backward;
          const bool ran = bwd ? run_backward_chain(*v, add, rows, dim, t, false, overlapped)
                               : run_forward_chain(*v, op, rows, dim, t, false, overlapped);
          if (!ran) continue;
          REQUIRE((bwd ? run_backward_chain(*v, add, rows, dim, t, true, serial)
                       : run_forward_chain(*v, op, rows, dim, t, true, serial)));
          const std::string diff = first_difference(overlapped, serial);
          INFO(v->name << " " << rmsnorm::to_string(op) << " " << rmsnorm::to_string(t) << " R=" << rows << " D=" << dim
                       << ": " << diff);
          CHECK(diff.empty());
          ++chains;
        }
      }
    }
  }
  // Every op reached some variant: a registry or dispatch change that declined everything would
  // otherwise pass silently.
  CHECK(chains > 100);
}

#endif  // RMSNORM_HAVE_CUDA
