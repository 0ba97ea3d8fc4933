// harness::run_forward / run_backward's guard checks, with a host variant that misbehaves in one
// way each: a byte written into a gap between rows, into the guard before or after a buffer, an
// input's live element changed, an input's gap written. Each is reported, and a variant that
// only writes its outputs passes. The regions (host images, their poison, the inputs' images) are
// the same code for host and device variants: only the transfers differ.
#include <cstring>
#include <functional>
#include <string>

#include "harness/catch.h"
#include "harness/run.h"
#include "rmsnorm/variant.h"

namespace {

using rmsnorm::DType;

oracle::ForwardCase forward_case() {
  oracle::ForwardCase c;
  c.rows = 3;
  c.dim = 40;
  for (std::int64_t i = 0; i < c.rows * c.dim; ++i) c.x.push_back(0.25f * static_cast<float>(i % 7) - 0.5f);
  for (std::int64_t j = 0; j < c.dim; ++j) c.g.push_back(1.0f + 0.125f * static_cast<float>(j % 3));
  return c;
}

oracle::BackwardCase backward_case() {
  oracle::BackwardCase c;
  c.rows = 3;
  c.dim = 40;
  for (std::int64_t i = 0; i < c.rows * c.dim; ++i) {
    c.x.push_back(0.25f * static_cast<float>(i % 7) - 0.5f);
    c.dy.push_back(0.5f - 0.125f * static_cast<float>(i % 5));
  }
  for (std::int64_t j = 0; j < c.dim; ++j) c.g.push_back(1.0f + 0.125f * static_cast<float>(j % 3));
  c.rstd = oracle::rstd_rounded(oracle::forward_of(c));
  return c;
}

unsigned char* bytes(const void* p) { return static_cast<unsigned char*>(const_cast<void*>(p)); }

// host.reference, then `after` on the arguments its entry (run_forward or run_backward) was given.
template <typename Args>
rmsnorm::Variant reference_then(std::function<rmsnorm::Status(const Args&)> rmsnorm::Variant::*entry,
                                std::function<void(const Args&)> after) {
  rmsnorm::Variant v = *rmsnorm::find_variant("host.reference");
  v.name = "host.misbehaving";
  const auto run = v.*entry;
  v.*entry = [run, after](const Args& a) {
    const rmsnorm::Status s = run(a);
    after(a);
    return s;
  };
  return v;
}
rmsnorm::Variant forward_then(std::function<void(const rmsnorm::ForwardArgs&)> after) {
  return reference_then(&rmsnorm::Variant::run_forward, std::move(after));
}
rmsnorm::Variant backward_then(std::function<void(const rmsnorm::BackwardArgs&)> after) {
  return reference_then(&rmsnorm::Variant::run_backward, std::move(after));
}

harness::Layout padded() {
  harness::Layout l;
  l.x_pad = l.y_pad = l.dy_pad = l.dx_pad = 5;
  return l;
}

}  // namespace

TEST_CASE("harness: a variant that writes its outputs only passes the guard checks") {
  const harness::Outcome f = harness::run_forward(forward_then([](const rmsnorm::ForwardArgs&) {}), forward_case(), padded());
  CHECK(f.guard_violation.empty());
  CHECK(f.pass());
  const harness::Outcome b =
      harness::run_backward(backward_then([](const rmsnorm::BackwardArgs&) {}), backward_case(), padded());
  CHECK(b.guard_violation.empty());
  CHECK(b.pass());
}

TEST_CASE("harness: a byte written into a gap between output rows is reported with its row") {
  const harness::Outcome o = harness::run_forward(forward_then([](const rmsnorm::ForwardArgs& a) {
                                                    // y row 1, element D + 2: inside the gap of 5
                                                    bytes(a.y.data)[(1 * a.y.stride + a.dim + 2) * 2] = 0;
                                                  }),
                                                  forward_case(), padded());
  CHECK(o.guard_violation == "y: gap after row 1 written at element 42");
}

TEST_CASE("harness: the guards before and after a buffer are checked") {
  const harness::Outcome before = harness::run_forward(
      forward_then([](const rmsnorm::ForwardArgs& a) { bytes(a.y.data)[-3] = 0x7f; }), forward_case(), padded());
  CHECK(before.guard_violation == "y: guard byte 3 before the buffer was written");
  const harness::Outcome after = harness::run_forward(forward_then([](const rmsnorm::ForwardArgs& a) {
                                                        const std::int64_t end = (2 * a.y.stride + a.dim) * 2;
                                                        bytes(a.y.data)[end + 9] = 0;
                                                      }),
                                                      forward_case(), padded());
  CHECK(after.guard_violation == "y: guard byte 9 after the buffer was written");
  const harness::Outcome rstd = harness::run_backward(
      backward_then([](const rmsnorm::BackwardArgs& a) { bytes(a.rstd)[3 * 4] = 0; }), backward_case(), padded());
  CHECK(rstd.guard_violation == "rstd: guard byte 0 after the buffer was written");
}

TEST_CASE("harness: an input's live element changed is reported") {
  const harness::Outcome g = harness::run_forward(
      forward_then([](const rmsnorm::ForwardArgs& a) { bytes(a.g)[2 * 7 + 1] ^= 0x40; }), forward_case(), padded());
  // Counted from the start of the input's allocation: 256 guard bytes, then g[7]'s high byte.
  CHECK(g.guard_violation == "g (an input) was written at byte 271");
  const harness::Outcome x = harness::run_backward(backward_then([](const rmsnorm::BackwardArgs& a) {
                                                     bytes(a.x.data)[(2 * a.x.stride + 39) * 2] ^= 1;
                                                   }),
                                                   backward_case(), padded());
  CHECK(x.guard_violation == "x (an input) was written at byte 514");  // 256 + (2·45 + 39)·2
}

TEST_CASE("harness: an input's gap written is reported") {
  harness::Layout l = padded();
  const harness::Outcome x = harness::run_forward(forward_then([](const rmsnorm::ForwardArgs& a) {
                                                    bytes(a.x.data)[(0 * a.x.stride + a.dim) * 2] = 0;
                                                  }),
                                                  forward_case(), l);
  CHECK(x.guard_violation == "x: gap after row 0 written at element 40");
  const harness::Outcome dy = harness::run_backward(backward_then([](const rmsnorm::BackwardArgs& a) {
                                                      bytes(a.dy.data)[(1 * a.dy.stride + a.dim + 4) * 2 + 1] = 0;
                                                    }),
                                                    backward_case(), l);
  CHECK(dy.guard_violation == "dy: gap after row 1 written at element 44");
}

TEST_CASE("harness: large images (mapped, kept for the next case) are poisoned afresh and checked throughout") {
  // Rows 2^25 + 40 elements apart: x and y (in place) one 128 MiB image, past the size kept for reuse.
  oracle::ForwardCase c = forward_case();
  harness::Layout l;
  l.x_pad = l.y_pad = std::int64_t{1} << 25;
  l.in_place = true;
  const std::int64_t deep = (std::int64_t{1} << 24) + 12345;  // an element far into row 0's gap
  const harness::Outcome gap = harness::run_forward(forward_then([deep](const rmsnorm::ForwardArgs& a) {
                                                      bytes(a.y.data)[(a.dim + deep) * 2 + 1] = 0x12;
                                                    }),
                                                    c, l);
  CHECK(gap.guard_violation == "x: gap after row 0 written at element " + std::to_string(40 + deep));
  const harness::Outcome tail = harness::run_forward(forward_then([](const rmsnorm::ForwardArgs& a) {
                                                       bytes(a.y.data)[(2 * a.y.stride + a.dim) * 2 + 255] = 0;
                                                     }),
                                                     c, l);
  CHECK(tail.guard_violation == "x: guard byte 255 after the buffer was written");
  // The next case of this size gets the image the two above wrote into: poison again throughout.
  const harness::Outcome clean = harness::run_forward(forward_then([](const rmsnorm::ForwardArgs&) {}), c, l);
  CHECK(clean.guard_violation.empty());
  CHECK(clean.pass());
  // An input of that size: its live bytes compared, its gaps checked.
  oracle::BackwardCase b = backward_case();
  harness::Layout lb;
  lb.x_pad = lb.dy_pad = lb.dx_pad = std::int64_t{1} << 25;
  const harness::Outcome x = harness::run_backward(backward_then([](const rmsnorm::BackwardArgs& a) {
                                                     bytes(a.x.data)[(2 * a.x.stride + 1) * 2] ^= 4;
                                                   }),
                                                   b, lb);
  CHECK(x.guard_violation == "x (an input) was written at byte " + std::to_string(256 + (2 * ((std::int64_t{1} << 25) + 40) + 1) * 2));
  const harness::Outcome ok = harness::run_backward(backward_then([](const rmsnorm::BackwardArgs&) {}), b, lb);
  CHECK(ok.pass());
}

TEST_CASE("harness: zero rows (no live bytes in x, y, rstd) run through the guard checks") {
  oracle::ForwardCase f = forward_case();
  f.rows = 0;
  f.x.clear();
  const harness::Outcome fo = harness::run_forward(forward_then([](const rmsnorm::ForwardArgs&) {}), f, padded());
  CHECK(fo.guard_violation.empty());
  CHECK(fo.status.ok());
  oracle::BackwardCase b = backward_case();
  b.rows = 0;
  b.x.clear();
  b.dy.clear();
  b.rstd.clear();
  const harness::Outcome bo = harness::run_backward(backward_then([](const rmsnorm::BackwardArgs&) {}), b, padded());
  CHECK(bo.guard_violation.empty());
  CHECK(bo.status.ok());
}
