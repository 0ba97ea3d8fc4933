// The default dispatcher's choices among the CUDA forward variants, and the dispatch table
// (rmsnorm/dispatch.h) it reads. No device is needed: the forward capability checks read the
// arguments only, and nothing launches; the arguments point at distinct aligned addresses that
// no one dereferences. (The backward's checks ask for a device: its choices are tested in
// test_gpu_backward.)
#include <algorithm>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "harness/catch.h"
#include "harness/probe_args.h"
#include "rmsnorm/dispatch.h"
#include "rmsnorm/variant.h"

namespace {

using rmsnorm::DType;

std::string pick(DType x, std::int64_t rows, std::int64_t dim, bool fp8 = false, bool add = false) {
  const rmsnorm::Variant* v = rmsnorm::pick_forward(harness::probe_forward(x, rows, dim, fp8, add), rmsnorm::Memory::device);
  return v ? v->name : std::string("none");
}

}  // namespace

TEST_CASE("forward dispatch: the per-token FP8 forward of odd widths goes to fwd.element_row.realigned for 16-bit rows from R = 8192 (D = 1025-2048: fwd.shifted_row)", "[host]") {
  const rmsnorm::Variant* realigned = rmsnorm::find_variant("fwd.element_row.realigned");
  REQUIRE(realigned != nullptr);  // this test is built with the CUDA variants only
  REQUIRE(rmsnorm::dispatch::has_rules(realigned->name.c_str()));
  CHECK(pick(DType::bf16, 8192, 1025, /*fp8=*/true) == "fwd.shifted_row");
  CHECK(pick(DType::bf16, 8192, 4097, /*fp8=*/true) == "fwd.element_row.realigned");
  CHECK(pick(DType::f16, 32768, 8191, /*fp8=*/true) == "fwd.element_row.realigned");
  CHECK(pick(DType::bf16, 32768, 1025, /*fp8=*/true, /*add=*/true) == "fwd.packed_rows");  // under the fused add: below
  CHECK(pick(DType::bf16, 8192, 1025) == "fwd.shifted_row");                        // the plain forward: below
  CHECK(pick(DType::bf16, 32768, 4097, false, /*add=*/true) == "fwd.packed_rows");
  CHECK(pick(DType::bf16, 8191, 1025, /*fp8=*/true) == "fwd.element_row");   // fewer rows
  CHECK(pick(DType::f32, 32768, 1025, /*fp8=*/true) == "fwd.element_row");   // fp32 rows
  CHECK(pick(DType::bf16, 8192, 8193) == "fwd.scalar");        // beyond the element paths' D
  CHECK(pick(DType::bf16, 8192, 1024) == "fwd.warp_row");      // aligned rows: the vector paths
  CHECK(pick(DType::bf16, 8192, 4096) == "fwd.block_row");
}

TEST_CASE("forward dispatch: packed odd widths go to fwd.packed_rows: the fused add from R = 4096 (16-bit from 512 at D >= 4097), the forward from R = 512 (fp32 from 8192)", "[host]") {
  const rmsnorm::Variant* packed = rmsnorm::find_variant("fwd.packed_rows");
  REQUIRE(packed != nullptr);
  REQUIRE(rmsnorm::dispatch::has_rules(packed->name.c_str()));
  CHECK(pick(DType::bf16, 4096, 1025, false, /*add=*/true) == "fwd.packed_rows");
  CHECK(pick(DType::f16, 32768, 8191, false, /*add=*/true) == "fwd.packed_rows");
  CHECK(pick(DType::f32, 4096, 4097, false, /*add=*/true) == "fwd.packed_rows");
  CHECK(pick(DType::bf16, 4095, 1025, false, /*add=*/true) == "fwd.element_row");     // fewer rows
  CHECK(pick(DType::bf16, 512, 4097, false, /*add=*/true) == "fwd.packed_rows");      // wider 16-bit rows
  CHECK(pick(DType::bf16, 511, 8191, false, /*add=*/true) == "fwd.element_row");
  CHECK(pick(DType::f32, 512, 8191, false, /*add=*/true) == "fwd.element_row");       // fp32: from R = 4096
  CHECK(pick(DType::bf16, 8192, 1025, false, /*add=*/true) == "fwd.packed_rows");
  CHECK(pick(DType::f32, 32768, 4095, false, /*add=*/true) == "fwd.element_row");    // fp32 below 4097
  CHECK(pick(DType::bf16, 8192, 513) == "fwd.packed_rows");                           // the plain forward
  CHECK(pick(DType::f16, 8192, 8191) == "fwd.packed_rows");
  CHECK(pick(DType::f32, 8192, 4097) == "fwd.packed_rows");
  CHECK(pick(DType::f32, 32768, 4099) == "fwd.element_row");                          // fp32 beyond 4097
  CHECK(pick(DType::bf16, 512, 513) == "fwd.packed_rows");                            // 16-bit rows from R = 512
  CHECK(pick(DType::f16, 2048, 1025) == "fwd.packed_rows");
  CHECK(pick(DType::bf16, 4095, 2049) == "fwd.packed_rows");
  CHECK(pick(DType::bf16, 511, 1025) != "fwd.packed_rows");
  CHECK(pick(DType::f32, 8191, 1025) != "fwd.packed_rows");                           // fp32 rows from R = 8192
  CHECK(pick(DType::bf16, 8191, 1025) == "fwd.shifted_row");                          // fewer rows: fwd.shifted_row (below)
  CHECK(pick(DType::bf16, 32768, 8193, false, /*add=*/true) == "fwd.scalar");         // beyond 8192
  CHECK(pick(DType::bf16, 32768, 4096, false, /*add=*/true) == "fwd.block_row");      // aligned rows
}

TEST_CASE("forward dispatch: the plain forward of misaligned 16-bit rows goes to fwd.shifted_row: D = 1025-4097 from R = 4096, wider from R = 16384", "[host]") {
  const rmsnorm::Variant* shifted = rmsnorm::find_variant("fwd.shifted_row");
  REQUIRE(shifted != nullptr);
  REQUIRE(rmsnorm::dispatch::has_rules(shifted->name.c_str()));
  CHECK(pick(DType::bf16, 4096, 1025) == "fwd.shifted_row");
  CHECK(pick(DType::f16, 32768, 1025) == "fwd.shifted_row");
  CHECK(pick(DType::bf16, 8192, 4097) == "fwd.shifted_row");
  CHECK(pick(DType::bf16, 16384, 8191) == "fwd.shifted_row");                        // wider rows from R = 16384
  CHECK(pick(DType::bf16, 16383, 8191) == "fwd.packed_rows");
  CHECK(pick(DType::bf16, 4095, 1025) == "fwd.packed_rows");                         // fewer rows: fwd.packed_rows (above)
  CHECK(pick(DType::bf16, 32768, 1023) == "fwd.packed_rows");                        // narrower rows
  CHECK(pick(DType::f32, 32768, 1025) == "fwd.packed_rows");                         // fp32 rows
  CHECK(pick(DType::bf16, 32768, 1025, false, /*add=*/true) == "fwd.packed_rows");   // the fused add
  CHECK(pick(DType::bf16, 32768, 4097, /*fp8=*/true) == "fwd.element_row.realigned");       // FP8 per token (D = 1025: below)
  CHECK(pick(DType::bf16, 32768, 1024) == "fwd.warp_row");                           // aligned rows
  // Tensors in different 16-byte frames: the next variant that takes them.
  rmsnorm::ForwardArgs apart = harness::probe_forward(DType::bf16, 32768, 1025, false, false);
  apart.y.data = static_cast<char*>(apart.y.data) + 2;
  const rmsnorm::Variant* v = rmsnorm::pick_forward(apart, rmsnorm::Memory::device);
  REQUIRE(v != nullptr);
  CHECK(std::string(v->name) == "fwd.packed_rows");
}

TEST_CASE("fwd.shifted_row takes rows whose tensors share one 16-byte frame, and says why it declines the rest", "[host]") {
  const rmsnorm::Variant* v = rmsnorm::find_variant("fwd.shifted_row");
  REQUIRE(v != nullptr);
  CHECK(v->shared_frame);
  CHECK(v->quant_16bit_rows);  // what the generators read, so that aimed FP8 draws take 16-bit rows
  using Code = rmsnorm::Status::Code;
  auto at = [](void* p, std::ptrdiff_t bytes) { return static_cast<void*>(static_cast<char*>(p) + bytes); };
  auto status = [&](const rmsnorm::ForwardArgs& a) { return v->can_implement_forward(a); };
  rmsnorm::ForwardArgs a = harness::probe_forward(DType::bf16, 4096, 1025, false, /*add=*/true);
  CHECK(status(a).ok());                                   // packed odd rows: x, o, y in one frame
  a.x.data = at(a.x.data, 6);
  a.o.data = at(a.o.data, 6);
  a.y.data = at(a.y.data, 6);
  CHECK(status(a).ok());                                   // every base at the same offset
  a.o.data = at(a.o.data, 2);
  CHECK(status(a).code == Code::misaligned);               // o at another
  CHECK(status(a).reason.find("frame") != std::string::npos);
  a.o.data = at(a.o.data, -2);
  a.y.stride = 1027;                                       // 2054 bytes: another residue mod 16
  CHECK(status(a).code == Code::misaligned);
  a.y.stride = 1033;                                       // 2066 = 2050 + 16: the same residue
  CHECK(status(a).ok());
  a.y.stride = 1027;
  a.rows = 1;                                              // one row: strides play no part
  CHECK(status(a).ok());
  // FP8 codes of 16-bit rows: the codes' rows at x's lead in bytes mod 8 (x's in elements).
  rmsnorm::ForwardArgs q = harness::probe_forward(DType::bf16, 4096, 1025, /*fp8=*/true);
  CHECK(status(q).ok());                                   // dense: stride 1025 ≡ 1 mod 8 in both
  q.x.data = at(q.x.data, 6);                              // x's lead 3 ...
  CHECK(status(q).code == Code::misaligned);
  q.y.data = at(q.y.data, 3);                              // ... the codes 3 bytes on
  CHECK(status(q).ok());
  q.y.stride = 1029;                                       // 1029 ≡ 5 mod 8, x's 1025 ≡ 1
  CHECK(status(q).code == Code::misaligned);
  q.y.stride = 1033;                                       // ≡ 1 mod 8 again
  CHECK(status(q).ok());
  q.quant = rmsnorm::Quant::static_scale;
  CHECK(status(q).ok());
  q.quant = rmsnorm::Quant::per_block;
  CHECK(status(q).ok());
  rmsnorm::ForwardArgs q32 = harness::probe_forward(DType::f32, 4096, 1025, /*fp8=*/true);
  CHECK(status(q32).code == Code::unsupported);            // fp32 rows: no 8-byte frame for the codes
  rmsnorm::ForwardArgs w = harness::probe_forward(DType::f32, 4096, 8193);
  CHECK(status(w).code == Code::unsupported);              // D > 8192
  w.dim = 8192;
  w.x.stride = w.y.stride = 8192;
  CHECK(status(w).ok());                                   // fp32 rows, fp32 weights, at its widest
}

TEST_CASE("forward dispatch: FP8 rows of 8192 < D from R = 256 (16-bit to 16384 from R = 1024: fwd.block_row; to 64 KB, and 16-bit past it from R = 512 to 128 KB, 80 KB under the fused add), the 16-bit fused add past 16384 and the 16-bit forward at 256-512 rows (from 513 rows at D = 28673-40000) go to fwd.large_d.pair", "[host]") {
  const rmsnorm::Variant* pair = rmsnorm::find_variant("fwd.large_d.pair");
  REQUIRE(pair != nullptr);
  REQUIRE(rmsnorm::dispatch::has_rules(pair->name.c_str()));
  CHECK(pick(DType::bf16, 8192, 16384, /*fp8=*/true) == "fwd.block_row");     // 16-bit FP8 to 16384: lean y
  CHECK(pick(DType::bf16, 1024, 9216, /*fp8=*/true) == "fwd.block_row");
  CHECK(pick(DType::bf16, 1023, 16384, /*fp8=*/true) == "fwd.large_d.pair"); // ... below fwd.block_row's rows for the lean-y kernel
  CHECK(pick(DType::f16, 512, 12288, /*fp8=*/true, /*add=*/true) == "fwd.large_d.pair");
  CHECK(pick(DType::bf16, 8192, 16392, /*fp8=*/true) == "fwd.large_d.pair"); // past 16384
  CHECK(pick(DType::f16, 512, 32768, /*fp8=*/true, /*add=*/true) == "fwd.large_d.pair");
  CHECK(pick(DType::f32, 4096, 16384, /*fp8=*/true) == "fwd.large_d.pair");
  CHECK(pick(DType::bf16, 8192, 8192, /*fp8=*/true) == "fwd.block_row");    // FP8 at D = 8192: the register form
  CHECK(pick(DType::bf16, 8192, 65536, /*fp8=*/true) == "fwd.large_d.pair");            // 16-bit FP8 to 128 KB rows
  CHECK(pick(DType::bf16, 511, 65536, /*fp8=*/true) == "fwd.large_d");                  // ... past 64 KB from 512 rows
  CHECK(pick(DType::bf16, 8192, 65544, /*fp8=*/true) == "fwd.large_d");                 // ... not past 128 KB
  CHECK(pick(DType::bf16, 4096, 40960, /*fp8=*/true, /*add=*/true) == "fwd.large_d.pair");  // add + FP8 to 80 KB
  CHECK(pick(DType::f16, 512, 40960, /*fp8=*/true, /*add=*/true) == "fwd.large_d.pair");
  CHECK(pick(DType::bf16, 4096, 40968, /*fp8=*/true, /*add=*/true) == "fwd.large_d");
  CHECK(pick(DType::bf16, 32768, 65536, /*fp8=*/true, /*add=*/true) == "fwd.large_d");
  CHECK(pick(DType::bf16, 511, 40960, /*fp8=*/true, /*add=*/true) == "fwd.large_d");
  CHECK(pick(DType::f32, 8192, 32768, /*fp8=*/true) == "fwd.large_d");
  CHECK(pick(DType::bf16, 8192, 24576) == "fwd.large_d");                 // the plain forward from 513 rows
  CHECK(pick(DType::bf16, 8192, 32768) == "fwd.large_d.pair");            // ... but at D = 28673-40000
  CHECK(pick(DType::f16, 513, 40000) == "fwd.large_d.pair");
  CHECK(pick(DType::bf16, 4096, 40008) == "fwd.large_d");
  CHECK(pick(DType::bf16, 512, 32768) == "fwd.large_d.pair");             // ... and at 256-512 rows to 49152
  CHECK(pick(DType::f16, 256, 49152) == "fwd.large_d.pair");
  CHECK(pick(DType::bf16, 513, 20000) == "fwd.large_d");
  CHECK(pick(DType::bf16, 255, 20000) == "fwd.large_d");
  CHECK(pick(DType::bf16, 512, 49160) == "fwd.large_d");
  CHECK(pick(DType::f32, 512, 20000) == "fwd.large_d");                   // fp32 rows: not measured
  CHECK(pick(DType::bf16, 128, 16392, /*fp8=*/true) == "fwd.large_d");    // too few rows for two blocks per SM
  CHECK(pick(DType::bf16, 255, 32768, /*fp8=*/true, /*add=*/true) == "fwd.large_d");
  CHECK(pick(DType::bf16, 256, 32768, /*fp8=*/true, /*add=*/true) == "fwd.large_d.pair");
  CHECK(pick(DType::bf16, 4096, 32768, /*fp8=*/true, /*add=*/true) == "fwd.large_d.pair");  // 16-bit: the pair at every R
  CHECK(pick(DType::f32, 4096, 16384, /*fp8=*/true, /*add=*/true) == "fwd.large_d");      // fp32 add + FP8 over 32 KB, many rows
  CHECK(pick(DType::bf16, 4096, 16384, /*fp8=*/true, /*add=*/true) == "fwd.block_row");
  CHECK(pick(DType::f16, 4096, 12288, /*fp8=*/true, /*add=*/true) == "fwd.block_row");
  CHECK(pick(DType::f32, 512, 12288, /*fp8=*/true, /*add=*/true) == "fwd.large_d.pair");   // fp32: block_row to 8192
  CHECK(pick(DType::bf16, 512, 20000, false, /*add=*/true) == "fwd.large_d.pair");      // the fused add
  CHECK(pick(DType::f16, 32768, 32768, false, /*add=*/true) == "fwd.large_d.pair");
  CHECK(pick(DType::bf16, 511, 20000, false, /*add=*/true) == "fwd.large_d");
  CHECK(pick(DType::bf16, 4096, 32776, false, /*add=*/true) == "fwd.large_d");          // past 32768
  CHECK(pick(DType::f32, 4096, 20000, false, /*add=*/true) == "fwd.large_d");           // fp32 rows: not measured
  CHECK(pick(DType::bf16, 4096, 16384, false, /*add=*/true) == "fwd.block_row");        // block_row's range
}

// The plain FP8 forward of 16-bit rows past 8192 at R <= 256: one block a row on fwd.block_row
// (before fwd.cluster_row in registration order, so it decides at D = 16384 too).
TEST_CASE("forward dispatch: the plain FP8 forward of 16-bit rows of 8192 < D <= 16384 at R <= 256 goes to fwd.block_row", "[host]") {
  CHECK(pick(DType::bf16, 1, 16384, /*fp8=*/true) == "fwd.block_row");
  CHECK(pick(DType::f16, 256, 8200, /*fp8=*/true) == "fwd.block_row");
  CHECK(pick(DType::bf16, 257, 16384, /*fp8=*/true) == "fwd.large_d.pair");       // more rows
  rmsnorm::ForwardArgs a = harness::probe_forward(DType::bf16, 16, 12288, /*fp8=*/true, /*add=*/false);
  a.quant = rmsnorm::Quant::per_block;
  const rmsnorm::Variant* v = rmsnorm::pick_forward(a, rmsnorm::Memory::device);
  CHECK((v ? v->name : std::string("none")) == "fwd.block_row");                  // every scale mode
  CHECK(pick(DType::bf16, 64, 16384, /*fp8=*/true, /*add=*/true) == "fwd.large_d");  // not under the fused add
  CHECK(pick(DType::f32, 16, 16384, /*fp8=*/true) != "fwd.block_row");            // nor fp32 rows
  CHECK(pick(DType::bf16, 1, 16392, /*fp8=*/true) != "fwd.block_row");            // past its width
}

TEST_CASE("forward dispatch: FP8 outputs of 16-bit rows, 7168 < D <= 8192, 512 <= R < 2048, go to fwd.block_row.staged", "[host]") {
  const rmsnorm::Variant* staged = rmsnorm::find_variant("fwd.block_row.staged");
  REQUIRE(staged != nullptr);
  REQUIRE(rmsnorm::dispatch::has_rules(staged->name.c_str()));
  CHECK(pick(DType::bf16, 512, 8192, /*fp8=*/true) == "fwd.block_row.staged");
  CHECK(pick(DType::f16, 2047, 7176, /*fp8=*/true, /*add=*/true) == "fwd.block_row.staged");
  CHECK(pick(DType::bf16, 511, 8192, /*fp8=*/true) == "fwd.block_row");     // fewer rows: not measured
  CHECK(pick(DType::bf16, 2048, 8192, /*fp8=*/true) == "fwd.block_row");    // block_row leads from 4096 rows
  CHECK(pick(DType::bf16, 32768, 8192, /*fp8=*/true, /*add=*/true) == "fwd.block_row");
  CHECK(pick(DType::bf16, 512, 7168, /*fp8=*/true) == "fwd.block_row");     // block_row leads at 6144
  CHECK(pick(DType::f32, 512, 8192, /*fp8=*/true, /*add=*/true) == "fwd.block_row");  // fp32 rows
  CHECK(pick(DType::bf16, 512, 8192) == "fwd.block_row");                    // not FP8
}

// The backward's dispatch rules themselves (pure functions of the arguments), checked without a
// device. The dispatcher's whole choice also asks each variant's
// can_implement, some of which query the device (cluster occupancy): test_gpu_backward checks it.
TEST_CASE("backward dispatch rules: bwd.staged_cluster for few rows of the wider half one block would hold, and for 16-bit rows past 16384 from R = 2", "[host]") {
  const rmsnorm::Variant* cluster = rmsnorm::find_variant("bwd.staged_cluster");
  REQUIRE(cluster != nullptr);
  REQUIRE(rmsnorm::dispatch::has_rules(cluster->name.c_str()));
  auto prefers = [&](DType x, std::int64_t rows, std::int64_t dim, bool add = false) {
    return rmsnorm::dispatch::prefers(*cluster, rmsnorm::dispatch::query_of(harness::probe_backward(x, rows, dim, add)));
  };
  // Rows one block holds (16-bit to 16384, fp32 to 8192), the wider half of them, up to R = 32
  // (bwd.staged_rows leads below and beyond).
  CHECK(prefers(DType::bf16, 1, 16384));
  CHECK(prefers(DType::bf16, 32, 8193));
  CHECK(prefers(DType::f16, 4, 12288, /*add=*/true));
  CHECK(prefers(DType::f32, 16, 8192));
  CHECK(prefers(DType::f32, 1, 4097));
  CHECK_FALSE(prefers(DType::bf16, 33, 16384));   // more rows: bwd.staged_rows
  CHECK_FALSE(prefers(DType::bf16, 512, 16384));
  CHECK_FALSE(prefers(DType::bf16, 1, 8192));     // the narrower half: bwd.staged_rows from R = 4
  CHECK_FALSE(prefers(DType::bf16, 16, 4096));
  CHECK_FALSE(prefers(DType::f32, 16, 4096));
  CHECK_FALSE(prefers(DType::f32, 64, 8200));     // fp32 past 8192: bwd.cluster_rows
  // 16-bit rows past 16384: from R = 2, or under the fused add.
  CHECK(prefers(DType::bf16, 64, 16392));
  CHECK(prefers(DType::bf16, 2, 16392));
  CHECK(prefers(DType::bf16, 16, 65536));
  CHECK(prefers(DType::bf16, 8192, 24576));
  CHECK(prefers(DType::bf16, 64, 49153));
  CHECK(prefers(DType::bf16, 32768, 65536));
  CHECK(prefers(DType::f16, 1, 65536, /*add=*/true));
  CHECK(prefers(DType::f16, 1, 16392, /*add=*/true));
  CHECK_FALSE(prefers(DType::bf16, 1, 16392));
  CHECK_FALSE(prefers(DType::bf16, 1, 65536));
  CHECK_FALSE(prefers(DType::bf16, 4096, 16384));  // one block holds it: bwd.staged_rows from R = 33
  CHECK_FALSE(prefers(DType::f32, 4096, 65536));
  // Dispatch order: bwd.staged_streams (16-bit rows of D <= 8192 from R = 1024) before it, then
  // bwd.staged_rows and bwd.cluster_rows.
  std::vector<std::string> order;
  for (const rmsnorm::Variant* v : rmsnorm::match_variants("bwd.*")) order.push_back(v->name);
  const auto at = [&](const std::string& n) { return std::find(order.begin(), order.end(), n) - order.begin(); };
  CHECK(at("bwd.staged_streams") < at("bwd.staged_cluster"));
  CHECK(at("bwd.staged_cluster") < at("bwd.staged_rows"));
  CHECK(at("bwd.staged_rows") < at("bwd.cluster_rows"));
}

// fwd.bulk_ring's hint alone (its capability check asks the device for bulk copies; the choice
// itself is tested in test_gpu_forward): 16-bit rows of 40960 < D without FP8 outputs, the fused
// add to D = 65536 from R = 512, the plain forward with 16-bit weights to D = 57344 from R = 4096.
TEST_CASE("forward dispatch rules: fwd.bulk_ring takes 16-bit rows of 40960 < D: the fused add to 65536 from R = 512, the forward to 57344 from R = 4096", "[host]") {
  const rmsnorm::Variant* ring = rmsnorm::find_variant("fwd.bulk_ring");
  REQUIRE(ring != nullptr);
  REQUIRE(rmsnorm::dispatch::has_rules(ring->name.c_str()));
  auto prefers = [&](DType x, std::int64_t rows, std::int64_t dim, bool fp8 = false, bool add = false) {
    return rmsnorm::dispatch::prefers(*ring, rmsnorm::dispatch::query_of(harness::probe_forward(x, rows, dim, fp8, add)));
  };
  CHECK(prefers(DType::bf16, 512, 65536, false, /*add=*/true));
  CHECK(prefers(DType::f16, 32768, 40961, false, /*add=*/true));
  CHECK(prefers(DType::bf16, 4096, 49152, false, /*add=*/true));
  CHECK_FALSE(prefers(DType::bf16, 511, 65536, false, /*add=*/true));
  CHECK_FALSE(prefers(DType::bf16, 4096, 40960, false, /*add=*/true));
  CHECK_FALSE(prefers(DType::bf16, 4096, 65537, false, /*add=*/true));
  CHECK_FALSE(prefers(DType::bf16, 4096, 65536, /*fp8=*/true, /*add=*/true));
  CHECK_FALSE(prefers(DType::f32, 4096, 65536, false, /*add=*/true));
  // The plain forward (16-bit weights: the probe's weights are of the row's type).
  CHECK(prefers(DType::bf16, 4096, 57344));
  CHECK(prefers(DType::f16, 32768, 40961));
  CHECK_FALSE(prefers(DType::bf16, 4095, 49152));
  CHECK_FALSE(prefers(DType::bf16, 4096, 40960));
  CHECK_FALSE(prefers(DType::bf16, 4096, 57345));
  CHECK_FALSE(prefers(DType::bf16, 4096, 65536));
  CHECK_FALSE(prefers(DType::bf16, 4096, 49152, /*fp8=*/true));
  CHECK_FALSE(prefers(DType::f32, 4096, 49152));
  rmsnorm::ForwardArgs fp32_weights = harness::probe_forward(DType::bf16, 4096, 49152, false, false);
  fp32_weights.g_type = DType::f32;
  CHECK_FALSE(rmsnorm::dispatch::prefers(*ring, rmsnorm::dispatch::query_of(fp32_weights)));
  fp32_weights.convention = rmsnorm::Convention::no_weight;  // no weights: the row's type
  CHECK(rmsnorm::dispatch::prefers(*ring, rmsnorm::dispatch::query_of(fp32_weights)));
}

// What fwd.bulk_ring declares is what draws aimed at it take (certify, the property suite): its
// fp32 rows fill 7 ring slots, and under the fused add o takes one of them. A wider declaration
// sends draws the ring declines, and certify fails the variant on its coverage floor.
TEST_CASE("fwd.bulk_ring declares the fp32 widths its ring holds: 57344, 49152 under the fused add", "[host]") {
  const rmsnorm::Variant* ring = rmsnorm::find_variant("fwd.bulk_ring");
  REQUIRE(ring != nullptr);
  CHECK(ring->max_dim_for(DType::f32) == 57344);
  CHECK(ring->max_dim_for(DType::f32, /*add=*/true) == 49152);
  CHECK_FALSE(ring->declares(49160, DType::f32, /*add=*/true));
  CHECK(ring->declares(57344, DType::f32));
  CHECK(ring->max_dim_for(DType::bf16, /*add=*/true) == ring->max_dim_for(DType::bf16));
}

// fwd.cluster_row's dispatch rules alone (its capability check asks the device for cluster launch:
// test_gpu_forward checks the dispatcher's choice), its FP8 branch included.
TEST_CASE("forward dispatch rules of fwd.cluster_row: 16-bit rows past 16384 to R = 64, their FP8 forms from 16384 to R = 16", "[host]") {
  const rmsnorm::Variant* cluster = rmsnorm::find_variant("fwd.cluster_row");
  REQUIRE(cluster != nullptr);
  REQUIRE(rmsnorm::dispatch::has_rules(cluster->name.c_str()));
  auto prefers = [&](DType x, std::int64_t rows, std::int64_t dim, bool fp8 = false, bool add = false) {
    return rmsnorm::dispatch::prefers(*cluster, rmsnorm::dispatch::query_of(harness::probe_forward(x, rows, dim, fp8, add)));
  };
  CHECK(prefers(DType::bf16, 1, 65536));
  CHECK(prefers(DType::f16, 64, 16385));
  CHECK_FALSE(prefers(DType::bf16, 64, 16384));           // fwd.block_row's width
  CHECK_FALSE(prefers(DType::bf16, 65, 65536));           // more rows
  CHECK_FALSE(prefers(DType::bf16, 64, 49152, false, /*add=*/true));  // the fused add at 64 past 32768
  CHECK(prefers(DType::bf16, 64, 32768, false, /*add=*/true));
  CHECK_FALSE(prefers(DType::f32, 1, 65536));             // fp32 rows
  // FP8 outputs: from D = 16384, R <= 16, 16-bit rows, with or without the fused add.
  CHECK(prefers(DType::bf16, 1, 16384, /*fp8=*/true));
  CHECK(prefers(DType::f16, 16, 65536, /*fp8=*/true, /*add=*/true));
  CHECK_FALSE(prefers(DType::bf16, 17, 65536, /*fp8=*/true));
  CHECK_FALSE(prefers(DType::bf16, 1, 16383, /*fp8=*/true));
  CHECK_FALSE(prefers(DType::f32, 1, 65536, /*fp8=*/true));
}

// FP8 outputs of packed odd widths: fwd.packed_rows takes the fused add + FP8 from
// R = 4096 (from R = 1024 at D >= 1025; fp32 rows from D = 4097 and R = 1024) in every scale mode,
// and the plain FP8 forward per block of 16-bit rows from R = 4096 (fwd.shifted_row takes some
// widths from R = 8192, below); the plain per-token FP8 forward stays with
// fwd.element_row.realigned / fwd.element_row.
TEST_CASE("forward dispatch: FP8 outputs of packed odd widths go to fwd.packed_rows under the fused add, and per block", "[host]") {
  auto pick_q = [](DType x, std::int64_t rows, std::int64_t dim, bool add, rmsnorm::Quant q) {
    rmsnorm::ForwardArgs a = harness::probe_forward(x, rows, dim, /*fp8=*/true, add);
    a.quant = q;
    const rmsnorm::Variant* v = rmsnorm::pick_forward(a, rmsnorm::Memory::device);
    return v ? v->name : std::string("none");
  };
  using rmsnorm::Quant;
  for (const Quant q : {Quant::dynamic_token, Quant::static_scale, Quant::per_block}) {
    INFO(rmsnorm::to_string(q));
    CHECK(pick_q(DType::bf16, 4096, 1025, true, q) == "fwd.packed_rows");
    CHECK(pick_q(DType::f16, 32768, 8191, true, q) == "fwd.packed_rows");
    CHECK(pick_q(DType::f32, 4096, 4097, true, q) == "fwd.packed_rows");
    CHECK(pick_q(DType::f32, 32768, 2049, true, q) != "fwd.packed_rows");  // fp32 rows below 4097
    CHECK(pick_q(DType::bf16, 1024, 1025, true, q) == "fwd.packed_rows");  // from R = 1024 at D >= 1025
    CHECK(pick_q(DType::f32, 1024, 8191, true, q) == "fwd.packed_rows");
    CHECK(pick_q(DType::bf16, 2048, 513, true, q) != "fwd.packed_rows");   // narrower rows: from R = 4096
    CHECK(pick_q(DType::bf16, 4096, 513, true, q) == "fwd.packed_rows");
    CHECK(pick_q(DType::bf16, 1023, 1025, true, q) != "fwd.packed_rows");  // fewer rows
    CHECK(pick_q(DType::bf16, 32768, 4096, true, q) != "fwd.packed_rows"); // aligned rows: the vector paths
  }
  CHECK(pick_q(DType::bf16, 4096, 1025, false, Quant::per_block) == "fwd.packed_rows");
  CHECK(pick_q(DType::f16, 32768, 8191, false, Quant::per_block) == "fwd.packed_rows");
  CHECK(pick_q(DType::f32, 32768, 8191, false, Quant::per_block) != "fwd.packed_rows");
  CHECK(pick_q(DType::bf16, 32768, 2049, false, Quant::dynamic_token) == "fwd.element_row.realigned");
  CHECK(pick_q(DType::bf16, 32768, 4097, false, Quant::dynamic_token) == "fwd.element_row.realigned");
  CHECK(pick_q(DType::bf16, 4096, 1025, false, Quant::dynamic_token) == "fwd.element_row");
  // The FP8 forward of packed odd widths from R = 8192: fwd.shifted_row at D = 1025-1536 in every
  // mode, static to 6656 and per block from 3073 to 6656; static fwd.packed_rows at 6657-8191.
  for (const Quant q : {Quant::dynamic_token, Quant::static_scale, Quant::per_block}) {
    INFO(rmsnorm::to_string(q));
    const bool token = q == Quant::dynamic_token, stat = q == Quant::static_scale, block = q == Quant::per_block;
    CHECK(pick_q(DType::bf16, 8192, 1025, false, q) == "fwd.shifted_row");
    CHECK(pick_q(DType::f16, 32768, 1535, false, q) == "fwd.shifted_row");
    CHECK(pick_q(DType::bf16, 8191, 1025, false, q) != "fwd.shifted_row");        // fewer rows
    CHECK(pick_q(DType::f32, 32768, 1025, false, q) != "fwd.shifted_row");        // fp32 rows: declined
    CHECK(pick_q(DType::bf16, 32768, 1025, true, q) == "fwd.packed_rows");        // under the fused add
    CHECK((pick_q(DType::bf16, 32768, 2047, false, q) == "fwd.shifted_row") == stat);
    CHECK((pick_q(DType::bf16, 32768, 2047, false, q) == "fwd.packed_rows") == block);
    CHECK((pick_q(DType::bf16, 32768, 2047, false, q) == "fwd.element_row.realigned") == token);
    CHECK((pick_q(DType::bf16, 8192, 4097, false, q) == "fwd.shifted_row") == !token);
    CHECK((pick_q(DType::f16, 32768, 5121, false, q) == "fwd.shifted_row") == !token);
    CHECK((pick_q(DType::bf16, 8192, 6655, false, q) == "fwd.shifted_row") == !token);
    CHECK(pick_q(DType::bf16, 32768, 6657, false, q) != "fwd.shifted_row");
    CHECK(pick_q(DType::bf16, 32768, 8191, false, q) == (token ? "fwd.element_row.realigned" : "fwd.packed_rows"));
  }
  // A strided tensor is not packed: declined whatever the mode.
  rmsnorm::ForwardArgs strided = harness::probe_forward(DType::bf16, 32768, 1025, true, true);
  strided.x.stride = 1027;
  CHECK(std::string(rmsnorm::pick_forward(strided, rmsnorm::Memory::device)->name) != "fwd.packed_rows");
}

namespace {

// Arguments the rule's row describes: its op, a row type it covers, and the weights / FP8 mode /
// alignment its condition asks for.
struct RuleArgs {
  rmsnorm::ForwardArgs fwd;
  rmsnorm::BackwardArgs bwd;
  bool backward = false;
};

RuleArgs args_for(const rmsnorm::dispatch::Rule& r, rmsnorm::Op op, std::int64_t rows, std::int64_t dim) {
  using rmsnorm::Op;
  using rmsnorm::dispatch::When;
  using rmsnorm::dispatch::Width;
  const DType x = r.width == Width::f32 ? DType::f32 : DType::bf16;
  RuleArgs out;
  out.backward = op == Op::backward || op == Op::add_backward;
  if (out.backward) {
    out.bwd = harness::probe_backward(x, rows, dim, op == Op::add_backward);
    if (r.when == When::misaligned) out.bwd.x.data = static_cast<char*>(out.bwd.x.data) + 2;
  } else {
    const bool fp8 = op == Op::forward_quant || op == Op::add_forward_quant;
    out.fwd = harness::probe_forward(x, rows, dim, fp8, op == Op::add_forward || op == Op::add_forward_quant);
    if (r.when == When::per_block) out.fwd.quant = rmsnorm::Quant::per_block;
    if (r.when == When::static_scale) out.fwd.quant = rmsnorm::Quant::static_scale;
    if (r.when == When::weights16) out.fwd.g_type = DType::bf16;
  }
  return out;
}

std::vector<std::int64_t> corners(const rmsnorm::dispatch::Range& r, std::int64_t cap) {
  const std::int64_t hi = std::min(r.hi, cap);
  std::vector<std::int64_t> v = {std::max<std::int64_t>(r.lo, 1), hi, std::max<std::int64_t>(r.lo, 1) + (hi - std::max<std::int64_t>(r.lo, 1)) / 2};
  return v;
}

}  // namespace

// Each row of the table, at the corners of its ranges: the rule is what decides for its variant
// there (or an earlier row of the same variant does), and the dispatcher never takes a variant
// where its deciding row says pass. Where a take row decides and the variant implements the
// arguments, the dispatcher takes it or a variant registered before it.
TEST_CASE("the dispatch table keeps each variant's rows together", "[host]") {
  const auto& rules = rmsnorm::dispatch::rules();
  for (std::size_t i = 0; i < rules.size(); ++i)
    for (std::size_t j = i + 2; j < rules.size(); ++j) {
      INFO(rules[i].variant << " at rows " << i << " and " << j);
      if (std::string(rules[i].variant) == rules[j].variant)
        for (std::size_t k = i + 1; k < j; ++k) CHECK(std::string(rules[k].variant) == rules[i].variant);
    }
}

TEST_CASE("the dispatcher follows every row of the dispatch table", "[host]") {
  int checked = 0, taken = 0;
  for (const rmsnorm::dispatch::Rule& r : rmsnorm::dispatch::rules()) {
    const rmsnorm::Variant* v = rmsnorm::find_variant(r.variant);
    INFO("rule of " << r.variant << ": " << r.reason);
    REQUIRE(v != nullptr);  // every row names a registered product
    CHECK_FALSE(v->is_mutant());
    for (int o = 0; o < rmsnorm::kOpCount; ++o) {
      if (!(r.ops & (1u << o))) continue;
      const auto op = static_cast<rmsnorm::Op>(o);
      CHECK(v->supports(op));
      for (std::int64_t rows : corners(r.rows, std::int64_t{1} << 20))
        for (std::int64_t dim : corners(r.dim, std::int64_t{1} << 17)) {
          const RuleArgs a = args_for(r, op, rows, dim);
          const rmsnorm::dispatch::Query q = a.backward ? rmsnorm::dispatch::query_of(a.bwd) : rmsnorm::dispatch::query_of(a.fwd);
          INFO(rmsnorm::to_string(op) << " R = " << rows << " D = " << dim);
          REQUIRE(rmsnorm::dispatch::matches(r, q));
          const rmsnorm::dispatch::Rule* d = rmsnorm::dispatch::deciding_rule(r.variant, q);
          REQUIRE(d != nullptr);
          CHECK(d <= &r);  // this row or an earlier one of the same variant
          CHECK(rmsnorm::dispatch::prefers(*v, q) == d->take);
          ++checked;
          if (a.backward) continue;  // the backward's capability checks ask for a device
          const rmsnorm::Variant* picked = rmsnorm::pick_forward(a.fwd, rmsnorm::Memory::device);
          if (!d->take) {
            CHECK((picked == nullptr || picked->name != r.variant));
          } else if (v->can_implement_forward(a.fwd).ok()) {
            REQUIRE(picked != nullptr);
            CHECK(picked >= &rmsnorm::registry().front());
            CHECK(picked <= v);
            ++taken;
          }
        }
    }
  }
  CHECK(checked > 200);
  CHECK(taken > 20);
}

TEST_CASE("renamed variants answer to their old names") {
  const std::pair<const char*, const char*> renamed[] = {
      {"fwd.staged_rows", "fwd.block_row.staged"},
      {"fwd.large_d_pair", "fwd.large_d.pair"},
      {"fwd.realigned_row", "fwd.element_row.realigned"},
      {"bwd.staged_rows.vec8", "bwd.staged_rows"},
      {"bwd.reread_rows.vec8", "bwd.reread_rows"},
  };
  for (const auto& [old_name, name] : renamed) {
    INFO(old_name);
    const rmsnorm::Variant* v = rmsnorm::find_variant(old_name);
    REQUIRE(v != nullptr);
    CHECK(v->name == name);
    const std::vector<const rmsnorm::Variant*> matched = rmsnorm::match_variants(old_name);
    REQUIRE(matched.size() == 1);
    CHECK(matched[0] == v);
  }
  // A glob matches names only: the old names do not double a pattern's matches.
  CHECK(rmsnorm::match_variants("fwd.large_d*").size() == 2);
  CHECK(rmsnorm::find_variant("fwd.no_such_variant") == nullptr);
}
