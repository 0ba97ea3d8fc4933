// Running one variant on one case, the way every test, the fuzzers and the command line do it:
// lay the case out in memory (row strides, misaligned bases, in-place aliasing) with poisoned
// guard bands before and after every buffer and poisoned gaps between strided rows, run the
// variant (host or device), check that no poisoned byte changed, read the outputs back dense,
// and let the oracle judge them.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "oracle/oracle.h"
#include "rmsnorm/types.h"
#include "rmsnorm/variant.h"

namespace harness {

// How a case sits in memory. Pads are extra elements per row (stride = D + pad); offsets move
// a buffer's base by that many *elements* from a 256-byte boundary (so a base is always
// aligned to its element size, and misaligned for 16-byte vectors unless offset·size % 16 == 0).
struct Layout {
  std::int64_t x_pad = 0, o_pad = 0, y_pad = 0, dy_pad = 0, dx_pad = 0, dres_pad = 0;
  std::int64_t x_offset = 0, o_offset = 0, y_offset = 0, g_offset = 0;
  std::int64_t dy_offset = 0, dx_offset = 0, dres_offset = 0;
  bool in_place = false;  // forward: y aliases x (plain) or o (fused add); backward: dx aliases dy
  std::string to_string() const;   // "x_pad=3 y_offset=2 in_place=1" (only non-defaults)
  static bool parse(const std::string& s, Layout& out, std::string& error);
};

// Poison written around and between buffers: NaN in every format for inputs (so a read of it
// shows up as NaN in the row), and checked byte by byte afterwards.
inline constexpr unsigned char kPoisonByte = 0xFF;
inline constexpr std::int64_t kGuardBytes = 256;

struct Outcome {
  rmsnorm::Status status;        // the launcher's status (not ok: nothing else is meaningful)
  std::string guard_violation;   // "" or "y: byte 17 after the buffer was written", "x gap row 3 ..."
  oracle::Verdict verdict;       // the oracle's judgement of the outputs (when status ok)
  bool pass() const { return status.ok() && guard_violation.empty() && verdict.pass; }
  std::string summary() const;   // one line: why it failed, or "ok"
};

// Run `v` on the case laid out per `layout` and judge it. Device variants get device buffers
// (cudaMalloc), host variants host buffers; the rstd handed to a backward is the oracle's
// RN32(exact r) unless the case carries its own. Never throws; a missing device is a status.
Outcome run_forward(const rmsnorm::Variant& v, const oracle::ForwardCase& c, const Layout& layout);

// Where a forward call's buffers start; y is x or o itself when it aliases one (in place).
struct ForwardBuffers {
  void* x = nullptr;
  void* o = nullptr;
  void* y = nullptr;
  void* g = nullptr;
  float* rstd = nullptr;
  float* scale = nullptr;
};
// The arguments of c's call on those buffers laid out per `layout` (`add`: the fused add, o
// given): row strides D + pad, y's that of the tensor it aliases; c's types, convention, FP8 mode
// and eps (its values are not read). What run_forward() launches; a check of what a variant
// implements can call its can_implement_forward() on them at any addresses.
rmsnorm::ForwardArgs forward_args(const oracle::ForwardCase& c, bool add, const Layout& layout,
                                  const ForwardBuffers& b);
Outcome run_backward(const rmsnorm::Variant& v, const oracle::BackwardCase& c, const Layout& layout);

// Ok when the device context is usable: waits for the device and reports an error that a kernel
// left behind (a sticky error makes every later call fail). Always ok without CUDA.
rmsnorm::Status device_health();

// The oracle's judgement of outputs a variant wrote, with the accumulation shape the judge
// allows it (rmsnorm::judged_row_shape / judged_dg_shape): a declared shape outside the limits
// makes the verdict an error naming the shape.
oracle::Verdict judge_forward(const rmsnorm::Variant& v, const oracle::ForwardCase& c, const oracle::ForwardResult& got);
oracle::Verdict judge_backward(const rmsnorm::Variant& v, const oracle::BackwardCase& c,
                               const oracle::BackwardResult& got);

// Run only, no judgement: the raw dense outputs (for determinism/batch-invariance properties).
struct RawForward { rmsnorm::Status status; std::string guard_violation; oracle::ForwardResult result; };
struct RawBackward { rmsnorm::Status status; std::string guard_violation; oracle::BackwardResult result; };
RawForward execute_forward(const rmsnorm::Variant& v, const oracle::ForwardCase& c, const Layout& layout);
RawBackward execute_backward(const rmsnorm::Variant& v, const oracle::BackwardCase& c, const Layout& layout);

// Timing in which every timed launch is a checked one: each case laid out in its own buffers,
// all launched back to back by the variant's own entry point (the one every check calls) between
// two waits for the whole device, so that work a launch leaves on any stream is timed too; then
// every case's outputs are read back and judged. seconds: host clock over the launches.
struct TimedRun {
  rmsnorm::Status status;
  double seconds = 0;
  std::vector<Outcome> outcomes;  // one per case, in order
};
TimedRun time_forward(const rmsnorm::Variant& v, const std::vector<oracle::ForwardCase>& cases, const Layout& layout);
TimedRun time_backward(const rmsnorm::Variant& v, const std::vector<oracle::BackwardCase>& cases, const Layout& layout);

// Where the harness's time goes, summed over the process and its threads: a run's whole
// execution (building the poisoned host images, checking them afterwards, and the three device
// phases inside it), device memory (cudaMalloc, cudaFree), transfers (both directions), the
// variant's launch and the wait for it, and the oracle's judgement. RMSNORM_TIMINGS=1 makes
// every test executable print timings_report() at exit; `certify --verbose` prints it too.
enum class Phase : int { execute, device_memory, transfers, launch, judge, count };
double phase_seconds(Phase p);
std::int64_t executions();
std::string timings_report();  // one line; "" before the first run
// Prints timings_report() to `out` when RMSNORM_TIMINGS is set (and not "0") and a run happened.
void print_timings_if_requested(std::FILE* out);

// The first k rows of a case alone (k ≤ its rows): a batch-invariance check runs both and
// compares those rows bit for bit.
oracle::ForwardCase first_rows(const oracle::ForwardCase& c, std::int64_t k);
oracle::BackwardCase first_rows(const oracle::BackwardCase& c, std::int64_t k);
// The rows of that check: 37, neither a tile nor a warp multiple.
inline constexpr std::int64_t kHeadRows = 37;
// `head` (the first rows alone) has exactly `n` elements and they equal the start of `batch`.
template <typename T>
bool head_matches(const std::vector<T>& head, const std::vector<T>& batch, std::size_t n) {
  return head.size() == n && batch.size() >= n && std::equal(head.begin(), head.end(), batch.begin());
}

// Odd widths for the packed kernels' tests: packed rows then start at every alignment; they
// cross a warp (33), the per-thread column counts (257-6145) and the wide instance's end (8191).
inline constexpr std::int64_t kOddPackedWidths[] = {1, 7, 33, 257, 1025, 2049, 4097, 6145, 8191};

}  // namespace harness
