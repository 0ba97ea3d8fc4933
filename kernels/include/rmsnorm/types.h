// The contract shared by every variant (host and CUDA), the oracle and the harness.
// The semantics are in docs/contract.md#semantics; this header holds only data: enums, argument
// structs, status.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace rmsnorm {

// Storage types. Arithmetic is always fp32; these are what sits in memory.
enum class DType : std::uint8_t { f32, f16, bf16, e4m3, e5m2 };

// How y is formed from x, r and g (docs/contract.md#conventions).
//   standard : y = RN_out(x·r·g)                 one rounding (the contract of this project)
//   llama    : y = RN_in(RN_in(x·r)·g)           Hugging Face LlamaRMSNorm, two roundings
//   gemma    : y = RN_out(x·r·(1+g))             weight stored as an offset from 1
//   no_weight: y = RN_out(x·r)                   g is ignored and may be null
enum class Convention : std::uint8_t { standard, llama, gemma, no_weight };

// FP8 output modes (docs/contract.md#fp8).
//   none          : y has the input type (or f32/f16/bf16 when asked)
//   static_scale  : q = RN_fp8_sat(y / s), s = *scale read from the argument
//   dynamic_token : s = max(amax_row / fp8_max, 1/(fp8_max·512)), one per row, written to scale[r]
//   per_block     : the same per group of kQuantGroup contiguous elements along D; scale is
//                   [R, ceil(D / kQuantGroup)] row-major, written
enum class Quant : std::uint8_t { none, static_scale, dynamic_token, per_block };

inline constexpr std::int64_t kQuantGroup = 128;

// Which operation an argument struct asks for (derived from the struct, see op_of()).
enum class Op : std::uint8_t {
  forward,            // y = rmsnorm(x)
  add_forward,        // x ← RN(x + o); y = rmsnorm(x)
  forward_quant,      // q = fp8(rmsnorm(x))
  add_forward_quant,  // both fusions
  backward,           // dx, dg
  add_backward,       // dx += dresidual (gradient of the residual stream), dg
};
inline constexpr int kOpCount = 6;
// The ops with a residual tensor (the fused add, forward or backward).
inline constexpr bool has_residual(Op op) {
  return op == Op::add_forward || op == Op::add_forward_quant || op == Op::add_backward;
}

// A 2-D row-major tensor view: rows of `dim` contiguous elements, `stride` elements apart.
// `data` is a host or device pointer, as the variant's Memory says.
struct Tensor {
  void* data = nullptr;
  DType type = DType::f32;
  std::int64_t stride = 0;  // elements between consecutive rows, >= dim
};

struct ForwardArgs {
  std::int64_t rows = 0;  // R >= 0; R == 0 is a valid no-op
  std::int64_t dim = 0;   // D >= 1
  Tensor x;               // input [R, D]; with fused add it is the residual stream h, overwritten
                          // by RN_x(h + o)
  Tensor o;               // fused add only: the sub-layer output added to x; o.data == nullptr
                          // means a plain forward
  Tensor y;               // output [R, D]: f32/f16/bf16, or e4m3/e5m2 when quant != none.
                          // y may alias x (plain) or o (fused add) exactly; no other overlap.
  const void* g = nullptr;  // weight [D]; null only with Convention::no_weight
  DType g_type = DType::f32;
  float* rstd = nullptr;  // optional output [R]: the fp32 r of each row, for the backward
  float eps = 1e-6f;      // >= 0, finite; inside the square root
  Convention convention = Convention::standard;
  Quant quant = Quant::none;
  float* scale = nullptr;  // static_scale: input [1]; dynamic_token: output [R];
                           // per_block: output [R, ceil(D/kQuantGroup)]
  void* stream = nullptr;  // cudaStream_t for device variants; ignored on the host
};

struct BackwardArgs {
  std::int64_t rows = 0;
  std::int64_t dim = 0;
  Tensor x;                  // forward input [R, D]
  Tensor dy;                 // incoming gradient [R, D], same type as x
  Tensor dx;                 // output [R, D], same type as x; may alias dy exactly
  Tensor dresidual;          // add_backward only: gradient reaching the residual stream from
                             // later layers; dx = rmsnorm_dx + dresidual. data == nullptr: plain
  const void* g = nullptr;   // weight [D]; null only with Convention::no_weight
  DType g_type = DType::f32;
  const float* rstd = nullptr;  // [R], the forward's r (fp32). Required.
  void* dg = nullptr;           // output [D] (f32, or g_type on request); null: dg not wanted
  DType dg_type = DType::f32;
  float eps = 1e-6f;            // only for variants that recompute r
  Convention convention = Convention::standard;
  void* workspace = nullptr;    // device (or host) scratch, size from Variant::workspace_bytes
  std::size_t workspace_bytes = 0;
  void* stream = nullptr;
};

// Status of a launcher or of can_implement: ok, or a code with a human reason.
struct Status {
  enum class Code : std::uint8_t {
    ok,
    invalid_argument,   // the arguments violate the contract (D = 0, stride < D, eps < 0, ...)
    unsupported,        // legal arguments this variant cannot do (dtype, D range, op)
    misaligned,         // this variant needs an alignment the pointers/strides lack
    bad_overlap,        // buffers overlap in a way the contract forbids
    workspace_too_small,
    no_device,          // no usable GPU
    launch_failed,      // the runtime reported an error
  };
  Code code = Code::ok;
  std::string reason;

  bool ok() const { return code == Code::ok; }
  static Status success() { return {}; }
  static Status fail(Code c, std::string why) { return {c, std::move(why)}; }
};

const char* to_string(DType t);
const char* to_string(Convention c);
const char* to_string(Quant q);
const char* to_string(Op op);
const char* to_string(Status::Code c);
bool parse(const std::string& s, DType& out);
bool parse(const std::string& s, Convention& out);
bool parse(const std::string& s, Quant& out);
bool parse(const std::string& s, Op& out);

inline constexpr std::size_t size_of(DType t) {
  return t == DType::f32 ? 4 : (t == DType::f16 || t == DType::bf16) ? 2 : 1;
}
inline constexpr bool is_fp8(DType t) { return t == DType::e4m3 || t == DType::e5m2; }

inline Op op_of(const ForwardArgs& a) {
  const bool add = a.o.data != nullptr;
  const bool q = a.quant != Quant::none;
  return add ? (q ? Op::add_forward_quant : Op::add_forward) : (q ? Op::forward_quant : Op::forward);
}
inline Op op_of(const BackwardArgs& a) {
  return a.dresidual.data != nullptr ? Op::add_backward : Op::backward;
}

// The shape of a floating-point reduction, for the error model (docs/contract.md#accumulation-shape): each participant
// adds `per_thread` terms sequentially in fp32, then the partials meet in a tree of depth
// `tree_depth` (or in a sequential chain: count its length in tree_depth too).
// The forward bound is eps32 = ((per_thread + tree_depth)/2 + 7)·u.
struct AccumShape {
  std::int64_t per_thread = 1;
  std::int32_t tree_depth = 0;
};

// Number of per-block scales in one row.
inline constexpr std::int64_t quant_groups(std::int64_t dim) {
  return (dim + kQuantGroup - 1) / kQuantGroup;
}

}  // namespace rmsnorm
