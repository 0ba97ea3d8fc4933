// Running a variant on a case inside poisoned memory, and judging the result.
//
// Every buffer is one allocation: [guard | offset | rows with gaps | guard]. The whole
// allocation starts as kPoisonByte (a NaN in every format), the live elements are written, and
// after the run every byte that is not a live element of an *output* must still be poison.
// Inputs are checked too: a variant must never write its inputs (except x under fused add).
#include "harness/run.h"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <sstream>
#include <string>
#include <vector>

#include "rmsnorm/formats.h"
#include "rmsnorm/validate.h"

#if RMSNORM_HAVE_CUDA
#include <cuda_runtime.h>
#endif

namespace harness {
namespace {

using rmsnorm::DType;
using rmsnorm::Memory;
using rmsnorm::Status;
using Code = rmsnorm::Status::Code;

constexpr std::int64_t kAlign = 256;

std::atomic<std::int64_t> g_phase_ns[static_cast<int>(Phase::count)];
std::atomic<std::int64_t> g_executions{0};

// Adds the time from its construction to its destruction to one phase.
class PhaseClock {
 public:
  explicit PhaseClock(Phase p) : phase_(p), start_(std::chrono::steady_clock::now()) {}
  ~PhaseClock() {
    const auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - start_);
    g_phase_ns[static_cast<int>(phase_)] += ns.count();
  }
  PhaseClock(const PhaseClock&) = delete;
  PhaseClock& operator=(const PhaseClock&) = delete;

 private:
  Phase phase_;
  std::chrono::steady_clock::time_point start_;
};

#if RMSNORM_HAVE_CUDA
// Device blocks kept for the next run instead of cudaFree (which waits for the device) and
// cudaMalloc: a certificate runs thousands of cases of a few sizes. A block is reused only whole,
// by a buffer of the same power-of-two size class (blocks up to kPoolMaxBlock); every upload overwrites the bytes the buffer
// spans (guards included), so nothing of an earlier run is seen. Blocks over kPoolMaxBlock, or
// past kPoolMaxBytes held, go back to the device at once. Never freed at exit (the process's
// context is torn down with it).
class DevicePool {
 public:
  static DevicePool& get() {
    static DevicePool* pool = new DevicePool;  // leaked on purpose: no cudaFree after CUDA's teardown
    return *pool;
  }
  static std::size_t size_class(std::size_t bytes) {
    if (bytes > kPoolMaxBlock) return bytes;  // exact, and never pooled
    std::size_t c = 4096;
    while (c < bytes) c *= 2;
    return c;
  }
  // A block of size_class(bytes) bytes, or nullptr with the runtime's error in `e`.
  void* take(std::size_t bytes, cudaError_t& e) {
    const std::size_t c = size_class(bytes);
    {
      std::lock_guard<std::mutex> lock(mu_);
      auto it = free_.find(c);
      if (it != free_.end() && !it->second.empty()) {
        void* p = it->second.back();
        it->second.pop_back();
        held_ -= c;
        e = cudaSuccess;
        return p;
      }
    }
    void* p = nullptr;
    e = cudaMalloc(&p, c);
    if (e == cudaErrorMemoryAllocation) {  // the pool's blocks back to the device, then once more
      (void)cudaGetLastError();
      release_all();
      e = cudaMalloc(&p, c);
    }
    return e == cudaSuccess ? p : nullptr;
  }
  void give(void* p, std::size_t bytes) {
    const std::size_t c = size_class(bytes);
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (c <= kPoolMaxBlock && held_ + c <= kPoolMaxBytes) {
        free_[c].push_back(p);
        held_ += c;
        return;
      }
    }
    cudaFree(p);
  }

 private:
  static constexpr std::size_t kPoolMaxBlock = std::size_t{256} << 20;
  static constexpr std::size_t kPoolMaxBytes = std::size_t{2} << 30;
  void release_all() {
    std::lock_guard<std::mutex> lock(mu_);
    for (auto& [c, blocks] : free_)
      for (void* p : blocks) cudaFree(p);
    free_.clear();
    held_ = 0;
  }
  std::mutex mu_;
  std::map<std::size_t, std::vector<void*>> free_;
  std::size_t held_ = 0;
};
#endif

// Host images of kHostBlockMin bytes or more (a case whose rows lie 2^31 elements apart, P18,
// has images of 4-8 GiB) are mapped memory kept for the next image of about the same size: the
// first touch of a fresh mapping costs the kernel a page fault per page (about 10 times the cost
// of writing the poison again), and those cases come many at a time. Asked for transparent huge
// pages. At most kHostPoolBlocks blocks are kept, and at most a quarter of the machine's memory
// (24 GiB at most), so that a check of the free memory (P18 on the host) still finds room; an
// image that no kept block fits lets every kept block go first, so a process never holds more
// than one case's images and those of the case before it (several processes run such cases side
// by side). Smaller images are vectors. Never unmapped at exit.
class HostPool {
 public:
  static constexpr std::size_t kHostBlockMin = std::size_t{64} << 20;
  static HostPool& get() {
    static HostPool* pool = new HostPool;  // leaked on purpose, as DevicePool
    return *pool;
  }
  // A block of at least `bytes` (its size in `size`), or nullptr when the system has none.
  unsigned char* take(std::size_t bytes, std::size_t& size) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      // The smallest kept block that fits and wastes at most a quarter of itself.
      auto best = free_.end();
      for (auto it = free_.begin(); it != free_.end(); ++it)
        if (it->second >= bytes && it->second - bytes <= it->second / 4 && (best == free_.end() || it->second < best->second))
          best = it;
      if (best != free_.end()) {
        unsigned char* p = best->first;
        size = best->second;
        held_ -= size;
        free_.erase(best);
        return p;
      }
      for (const auto& [q, n] : free_) munmap(q, n);
      free_.clear();
      held_ = 0;
    }
    void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) return nullptr;
    (void)madvise(p, bytes, MADV_HUGEPAGE);  // a hint: without it the pages are 4 KiB
    size = bytes;
    return static_cast<unsigned char*>(p);
  }
  void give(unsigned char* p, std::size_t size) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (free_.size() < kHostPoolBlocks && held_ + size <= max_held_) {
        free_.emplace_back(p, size);
        held_ += size;
        return;
      }
    }
    munmap(p, size);
  }

 private:
  static constexpr std::size_t kHostPoolBlocks = 4;
  static std::size_t quarter_of_memory() {
    const long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
    const std::size_t quarter = pages > 0 && page > 0 ? static_cast<std::size_t>(pages) * static_cast<std::size_t>(page) / 4 : 0;
    return std::min(quarter, std::size_t{24} << 30);
  }
  const std::size_t max_held_ = quarter_of_memory();
  std::mutex mu_;
  std::vector<std::pair<unsigned char*, std::size_t>> free_;
  std::size_t held_ = 0;
};

// `n` bytes of poison from p, in parallel for large images (a first touch of fresh pages is
// the kernel's work per page, which threads share).
void poison(unsigned char* p, std::size_t n) {
  constexpr std::size_t kChunk = std::size_t{16} << 20;
  const auto chunks = static_cast<std::int64_t>((n + kChunk - 1) / kChunk);
#pragma omp parallel for schedule(static) if (chunks > 4)
  for (std::int64_t k = 0; k < chunks; ++k) {
    const std::size_t from = static_cast<std::size_t>(k) * kChunk;
    std::memset(p + from, kPoisonByte, std::min(kChunk, n - from));
  }
}

// The first byte of [p + from, p + to) that is not poison, or -1: compared a block at a time
// against a block of poison (the library's vectorized memcmp), blocks in parallel for large spans.
std::int64_t first_not_poison(const unsigned char* p, std::int64_t from, std::int64_t to) {
  constexpr std::int64_t kBlock = 64 << 10;
  static const std::vector<unsigned char> pattern(static_cast<std::size_t>(kBlock), kPoisonByte);
  if (to <= from) return -1;
  const std::int64_t blocks = (to - from + kBlock - 1) / kBlock;
  std::int64_t first_bad_block = blocks;
#pragma omp parallel for schedule(static) reduction(min : first_bad_block) if (blocks > 64)
  for (std::int64_t b = 0; b < blocks; ++b) {
    const std::int64_t lo = from + b * kBlock, n = std::min(kBlock, to - lo);
    if (b < first_bad_block && std::memcmp(p + lo, pattern.data(), static_cast<std::size_t>(n)) != 0)
      first_bad_block = b;
  }
  if (first_bad_block == blocks) return -1;
  const std::int64_t lo = from + first_bad_block * kBlock, hi = std::min(lo + kBlock, to);
  for (std::int64_t i = lo; i < hi; ++i)
    if (p[i] != kPoisonByte) return i;
  return -1;
}

// One guarded buffer: a host image and, for device variants, its device twin.
class Region {
 public:
  Region(std::string name, Memory where, std::int64_t rows, std::int64_t dim, std::int64_t stride, DType type,
         std::int64_t offset_elements)
      : name_(std::move(name)), where_(where), rows_(rows), dim_(dim), stride_(stride), type_(type),
        offset_(offset_elements * static_cast<std::int64_t>(rmsnorm::size_of(type))) {
    const std::uint64_t span = rmsnorm::span_bytes(rows, dim, stride, rmsnorm::size_of(type));
    lead_ = kGuardBytes + offset_;
    total_ = static_cast<std::size_t>(lead_ + static_cast<std::int64_t>(span) + kGuardBytes);
    if (total_ >= HostPool::kHostBlockMin) mapped_ = HostPool::get().take(total_, mapped_size_);
    if (mapped_) {
      host_ = mapped_;  // page-aligned
      poison(host_, total_);
    } else {
      // Over-allocate so the host image can start on a kAlign boundary like cudaMalloc's.
      storage_.assign(total_ + kAlign, kPoisonByte);
      const auto base = reinterpret_cast<std::uintptr_t>(storage_.data());
      host_ = storage_.data() + (kAlign - base % kAlign) % kAlign;
    }
  }
  ~Region() {
    if (mapped_) HostPool::get().give(mapped_, mapped_size_);
#if RMSNORM_HAVE_CUDA
    if (device_) {
      PhaseClock clock(Phase::device_memory);
      DevicePool::get().give(device_, total_);
    }
#endif
  }
  Region(const Region&) = delete;
  Region& operator=(const Region&) = delete;

  // Element (r, j) of the host image.
  unsigned char* at(std::int64_t r, std::int64_t j) {
    return host_ + lead_ + (r * stride_ + j) * static_cast<std::int64_t>(rmsnorm::size_of(type_));
  }
  void set(std::int64_t r, std::int64_t j, float v) { rmsnorm::store_rounded(at(r, j), type_, 0, v); }
  std::uint32_t bits(std::int64_t r, std::int64_t j) {
    std::uint32_t b = 0;
    std::memcpy(&b, at(r, j), rmsnorm::size_of(type_));
    return b;
  }
  float value(std::int64_t r, std::int64_t j) { return rmsnorm::load_as_float(at(r, j), type_, 0); }

  // Bring the target in line with the host image (allocating device memory on first use).
  Status upload() {
    if (where_ == Memory::host) return Status::success();
#if RMSNORM_HAVE_CUDA
    if (!device_) {
      PhaseClock clock(Phase::device_memory);
      cudaError_t e = cudaSuccess;
      device_ = DevicePool::get().take(total_, e);
      if (e != cudaSuccess) {
        (void)cudaGetLastError();
        device_ = nullptr;
        return Status::fail(Code::launch_failed, "cudaMalloc(" + std::to_string(total_) + ") for " + name_ +
                                                     ": " + cudaGetErrorString(e));
      }
    }
    PhaseClock clock(Phase::transfers);
    const cudaError_t e = cudaMemcpy(device_, host_, total_, cudaMemcpyHostToDevice);
    if (e != cudaSuccess) return Status::fail(Code::launch_failed, std::string("upload: ") + cudaGetErrorString(e));
    return Status::success();
#else
    return Status::fail(Code::no_device, "built without CUDA");
#endif
  }
  Status download() {
    if (where_ == Memory::host) return Status::success();
#if RMSNORM_HAVE_CUDA
    PhaseClock clock(Phase::transfers);
    const cudaError_t e = cudaMemcpy(host_, device_, total_, cudaMemcpyDeviceToHost);
    if (e != cudaSuccess) return Status::fail(Code::launch_failed, std::string("download: ") + cudaGetErrorString(e));
    return Status::success();
#else
    return Status::fail(Code::no_device, "built without CUDA");
#endif
  }
  // The pointer the variant gets: element (0, 0) on the variant's side.
  void* target() {
    unsigned char* base = where_ == Memory::host ? host_ : static_cast<unsigned char*>(device_);
    return base ? base + lead_ : nullptr;
  }

  // First byte outside the live elements that is no longer poison, or "".
  std::string check_poison() {
    const std::int64_t elem = static_cast<std::int64_t>(rmsnorm::size_of(type_));
    auto bad = [&](std::int64_t from, std::int64_t to) { return first_not_poison(host_, from, to); };
    std::int64_t i = bad(0, lead_);
    if (i >= 0) return name_ + ": guard byte " + std::to_string(lead_ - i) + " before the buffer was written";
    for (std::int64_t r = 0; r + 1 < rows_; ++r) {
      const std::int64_t from = lead_ + (r * stride_ + dim_) * elem, to = lead_ + (r + 1) * stride_ * elem;
      i = bad(from, to);
      if (i >= 0)
        return name_ + ": gap after row " + std::to_string(r) + " written at element " +
               std::to_string((i - lead_) / elem - r * stride_);
    }
    const std::int64_t end = rows_ > 0 ? lead_ + ((rows_ - 1) * stride_ + dim_) * elem : lead_;
    i = bad(end, static_cast<std::int64_t>(total_));
    if (i >= 0) return name_ + ": guard byte " + std::to_string(i - end) + " after the buffer was written";
    return "";
  }
  // A live element that changed although the buffer is an input (`before`: its snapshot()).
  // Only the live bytes are compared: every other byte is poison before the run, and
  // check_poison() judges those. The byte is counted from the start of the allocation.
  std::string check_unchanged(const std::vector<unsigned char>& before) {
    const std::int64_t row_bytes = dim_ * static_cast<std::int64_t>(rmsnorm::size_of(type_));
    if (row_bytes == 0) return "";  // no live bytes (R = 0: rstd holds none)
    for (std::int64_t r = 0; r < rows_; ++r) {
      const unsigned char* now = at(r, 0);
      const unsigned char* was = before.data() + r * row_bytes;
      if (std::memcmp(now, was, static_cast<std::size_t>(row_bytes)) == 0) continue;
      for (std::int64_t k = 0; k < row_bytes; ++k)
        if (now[k] != was[k]) return name_ + " (an input) was written at byte " + std::to_string(now + k - host_);
    }
    return "";
  }
  // The live bytes, row after row (what check_unchanged() compares).
  std::vector<unsigned char> snapshot() {
    const std::int64_t row_bytes = dim_ * static_cast<std::int64_t>(rmsnorm::size_of(type_));
    std::vector<unsigned char> out(static_cast<std::size_t>(rows_ * row_bytes));
    if (out.empty()) return out;  // no live bytes: nothing to copy (and no pointer to copy to)
    for (std::int64_t r = 0; r < rows_; ++r) std::memcpy(out.data() + r * row_bytes, at(r, 0), static_cast<std::size_t>(row_bytes));
    return out;
  }

 private:
  std::string name_;
  Memory where_;
  std::int64_t rows_, dim_, stride_;
  DType type_;
  std::int64_t offset_;
  std::int64_t lead_ = 0;
  std::size_t total_ = 0;
  std::vector<unsigned char> storage_;  // the image of a small buffer
  unsigned char* mapped_ = nullptr;     // or of a large one (HostPool)
  std::size_t mapped_size_ = 0;
  unsigned char* host_ = nullptr;
  void* device_ = nullptr;
};

// Upload or download every buffer of a run (null entries are buffers the case does not use).
Status for_each_region(const std::vector<Region*>& all, Status (Region::*step)()) {
  for (Region* r : all)
    if (r) {
      Status s = (r->*step)();
      if (!s.ok()) return s;
    }
  return Status::success();
}

Status sync_device(Memory where) {
  if (where == Memory::host) return Status::success();
#if RMSNORM_HAVE_CUDA
  const cudaError_t e = cudaDeviceSynchronize();
  if (e != cudaSuccess) {
    const cudaError_t last = cudaGetLastError();
    return Status::fail(Code::launch_failed, std::string("kernel failed: ") + cudaGetErrorString(e) + " / " +
                                                 cudaGetErrorString(last));
  }
#endif
  return Status::success();
}

// Rows of at least this many elements in all are filled and read back by OpenMP threads (each
// row's elements are its own: no two threads touch one byte); smaller ones stay on one thread.
constexpr std::int64_t kParallelElements = std::int64_t{1} << 16;

void fill(Region& reg, const std::vector<float>& v, std::int64_t rows, std::int64_t dim) {
#pragma omp parallel for schedule(static) if (rows * dim >= kParallelElements)
  for (std::int64_t r = 0; r < rows; ++r)
    for (std::int64_t j = 0; j < dim; ++j) reg.set(r, j, v[static_cast<std::size_t>(r * dim + j)]);
}

std::string first_nonempty(std::initializer_list<std::string> xs) {
  for (const auto& s : xs)
    if (!s.empty()) return s;
  return "";
}

Status device_gate(const rmsnorm::Variant& v) {
  if (v.memory == Memory::device) return rmsnorm::device_status();
  return Status::success();
}

// What both directions check before building any buffer: the oracle's validation of the case
// (a case the contract rejects is reported as invalid_argument), then the variant's device.
template <typename OracleCase>
Status launch_gate(const rmsnorm::Variant& v, const OracleCase& c) {
  const std::string invalid = oracle::validate(c);
  if (!invalid.empty()) return Status::fail(Code::invalid_argument, "invalid case: " + invalid);
  return device_gate(v);
}

// The bit patterns of an R×D view held by a region, row-major and dense.
std::vector<std::uint32_t> dense_bits(Region& reg, std::int64_t R, std::int64_t D) {
  std::vector<std::uint32_t> out(static_cast<std::size_t>(R * D));
#pragma omp parallel for schedule(static) if (R * D >= kParallelElements)
  for (std::int64_t r = 0; r < R; ++r)
    for (std::int64_t j = 0; j < D; ++j) out[static_cast<std::size_t>(r * D + j)] = reg.bits(r, j);
  return out;
}

// Runs the variant's launcher, waits for it, and reads every region back.
template <typename Args, typename Launch>
Status launch_and_download(Launch launch, const Args& a, Memory where, const std::vector<Region*>& all) {
  Status st;
  {
    PhaseClock clock(Phase::launch);
    st = launch(a);
    if (st.ok()) st = sync_device(where);
  }
  if (!st.ok()) return st;
  return for_each_region(all, &Region::download);
}

}  // namespace

double phase_seconds(Phase p) { return 1e-9 * static_cast<double>(g_phase_ns[static_cast<int>(p)].load()); }
std::int64_t executions() { return g_executions.load(); }

std::string timings_report() {
  const std::int64_t n = executions();
  if (n == 0) return "";
  const double exec = phase_seconds(Phase::execute), mem = phase_seconds(Phase::device_memory),
               xfer = phase_seconds(Phase::transfers), launch = phase_seconds(Phase::launch);
  char line[320];
  std::snprintf(line, sizeof line,
                "harness time over %lld runs: %.1f s executing (host images and guard checks %.1f s, device "
                "memory %.1f s, transfers %.1f s, launch and wait %.1f s), oracle's judgement %.1f s",
                static_cast<long long>(n), exec, exec - mem - xfer - launch, mem, xfer, launch,
                phase_seconds(Phase::judge));
  return line;
}

void print_timings_if_requested(std::FILE* out) {
  const char* t = std::getenv("RMSNORM_TIMINGS");
  if (t == nullptr || std::string(t) == "0") return;
  const std::string report = timings_report();
  if (!report.empty()) std::fprintf(out, "%s\n", report.c_str());
}

rmsnorm::Status device_health() { return sync_device(Memory::device); }

std::string Outcome::summary() const {
  if (!status.ok()) return std::string("status ") + rmsnorm::to_string(status.code) + ": " + status.reason;
  if (!guard_violation.empty()) return "guard: " + guard_violation;
  if (!verdict.error.empty()) return "invalid case: " + verdict.error;
  if (!verdict.pass) return verdict.first_failure;
  return "ok";
}

namespace {

// One case in its buffers, launched and waited for, read back (execute_forward/backward).
template <typename Setup, typename Raw, typename Case, typename Launch, typename Prepare, typename Collect>
Raw execute_case(const rmsnorm::Variant& v, const Case& c, const Layout& L, const Launch& launch, const char* op,
                 Prepare prepare, Collect collect) {
  PhaseClock clock(Phase::execute);  // first: its end includes the regions' release
  ++g_executions;
  Raw out;
  out.status = launch_gate(v, c);
  if (!out.status.ok()) return out;
  if (!launch) {
    out.status = Status::fail(Code::unsupported, v.name + " has no " + op);
    return out;
  }
  Setup s;
  out.status = prepare(v, c, L, s);
  if (!out.status.ok()) return out;
  out.status = launch_and_download(launch, s.a, v.memory, s.all);
  if (!out.status.ok()) return out;
  collect(v, c, s, out);
  return out;
}

// Every case in its own buffers, launched back to back between two waits for the whole device
// (harness::TimedRun), then each one read back and judged.
template <typename Setup, typename Raw, typename Case, typename Launch, typename Prepare, typename Collect,
          typename Judge>
TimedRun time_cases(const rmsnorm::Variant& v, const std::vector<Case>& cases, const Layout& L, const Launch& launch,
                    const char* op, Prepare prepare, Collect collect, Judge judge) {
  PhaseClock clock(Phase::execute);
  TimedRun t;
  if (!launch) {
    t.status = Status::fail(Code::unsupported, v.name + " has no " + op);
    return t;
  }
  std::vector<std::unique_ptr<Setup>> setups;
  for (const Case& c : cases) {
    ++g_executions;
    t.status = launch_gate(v, c);
    if (!t.status.ok()) return t;
    setups.push_back(std::make_unique<Setup>());
    t.status = prepare(v, c, L, *setups.back());
    if (!t.status.ok()) return t;
  }
  // The clock runs from an idle device to an idle device: whatever the launches leave running,
  // on any stream, is inside it.
  t.status = sync_device(v.memory);
  if (!t.status.ok()) return t;
  const auto t0 = std::chrono::steady_clock::now();
  for (auto& s : setups) {
    t.status = launch(s->a);
    if (!t.status.ok()) return t;
  }
  t.status = sync_device(v.memory);
  const auto t1 = std::chrono::steady_clock::now();
  if (!t.status.ok()) return t;
  t.seconds = std::chrono::duration<double>(t1 - t0).count();
  for (std::size_t i = 0; i < setups.size(); ++i) {
    Raw raw;
    raw.status = for_each_region(setups[i]->all, &Region::download);
    if (raw.status.ok()) collect(v, cases[i], *setups[i], raw);
    Outcome o;
    o.status = raw.status;
    o.guard_violation = raw.guard_violation;
    if (o.status.ok()) o.verdict = judge(v, cases[i], raw.result);
    t.outcomes.push_back(std::move(o));
  }
  return t;
}

}  // namespace

rmsnorm::ForwardArgs forward_args(const oracle::ForwardCase& c, bool add, const Layout& L, const ForwardBuffers& b) {
  const std::int64_t D = c.dim;
  rmsnorm::ForwardArgs a;
  a.rows = c.rows;
  a.dim = D;
  a.x = {b.x, c.x_type, D + L.x_pad};
  if (add) a.o = {b.o, c.x_type, D + L.o_pad};
  const std::int64_t y_stride = b.y == b.x ? D + L.x_pad : (add && b.y == b.o) ? D + L.o_pad : D + L.y_pad;
  a.y = {b.y, c.y_type, y_stride};
  a.g = b.g;
  a.g_type = c.g_type;
  a.rstd = b.rstd;
  a.eps = c.eps;
  a.convention = c.convention;
  a.quant = c.quant;
  a.scale = b.scale;
  return a;
}

namespace {

// A forward case laid out in its own buffers and uploaded, ready to launch: the regions, the
// arguments pointing into them, and the images of the inputs the variant must leave unchanged.
struct ForwardSetup {
  std::unique_ptr<Region> x, o, y, g, rstd, scale;
  Region* yreg = nullptr;
  std::vector<Region*> all;
  std::vector<unsigned char> g_before, o_before, x_before, s_before;
  rmsnorm::ForwardArgs a;
};

Status prepare_forward(const rmsnorm::Variant& v, const oracle::ForwardCase& c, const Layout& L, ForwardSetup& s) {
  const std::int64_t R = c.rows, D = c.dim;
  const bool add = !c.o.empty();
  const bool quant = c.quant != rmsnorm::Quant::none;
  const Memory where = v.memory;

  s.x = std::make_unique<Region>("x", where, R, D, D + L.x_pad, c.x_type, L.x_offset);
  fill(*s.x, c.x, R, D);
  if (add) {
    s.o = std::make_unique<Region>("o", where, R, D, D + L.o_pad, c.x_type, L.o_offset);
    fill(*s.o, c.o, R, D);
  }
  // In place: y is the input buffer itself (x, or o under fused add), never a copy.
  if (L.in_place && !quant) {
    s.yreg = add ? s.o.get() : s.x.get();
  } else {
    s.y = std::make_unique<Region>("y", where, R, D, D + L.y_pad, c.y_type, L.y_offset);
    s.yreg = s.y.get();
  }
  if (c.convention != rmsnorm::Convention::no_weight) {
    s.g = std::make_unique<Region>("g", where, 1, D, D, c.g_type, L.g_offset);
    fill(*s.g, c.g, 1, D);
  }
  s.rstd = std::make_unique<Region>("rstd", where, 1, R, R, DType::f32, 0);
  if (quant) {
    const std::int64_t n = c.quant == rmsnorm::Quant::static_scale ? 1
                           : c.quant == rmsnorm::Quant::dynamic_token ? R
                                                                      : R * rmsnorm::quant_groups(D);
    s.scale = std::make_unique<Region>("scale", where, 1, n, n, DType::f32, 0);
    if (c.quant == rmsnorm::Quant::static_scale) s.scale->set(0, 0, c.static_scale);
  }

  s.all = {s.x.get(), s.o.get(), s.y.get(), s.g.get(), s.rstd.get(), s.scale.get()};
  const Status up = for_each_region(s.all, &Region::upload);
  if (!up.ok()) return up;
  if (s.g) s.g_before = s.g->snapshot();
  if (s.o && s.yreg != s.o.get()) s.o_before = s.o->snapshot();
  if (!add && s.yreg != s.x.get()) s.x_before = s.x->snapshot();
  if (s.scale && c.quant == rmsnorm::Quant::static_scale) s.s_before = s.scale->snapshot();

  s.a =
      forward_args(c, add, L,
                   {s.x->target(), s.o ? s.o->target() : nullptr, s.yreg->target(), s.g ? s.g->target() : nullptr,
                    static_cast<float*>(s.rstd->target()), s.scale ? static_cast<float*>(s.scale->target()) : nullptr});
  return Status::success();
}

// After the launch and the download: the guard bands, the unchanged inputs, the dense outputs.
void collect_forward(const rmsnorm::Variant& v, const oracle::ForwardCase& c, ForwardSetup& s, RawForward& out) {
  const std::int64_t R = c.rows, D = c.dim;
  const bool add = !c.o.empty();
  const bool quant = c.quant != rmsnorm::Quant::none;
  out.guard_violation = first_nonempty(
      {s.x->check_poison(), s.o ? s.o->check_poison() : "", s.y ? s.y->check_poison() : "",
       s.g ? s.g->check_poison() : "", s.rstd->check_poison(), s.scale ? s.scale->check_poison() : "",
       s.g ? s.g->check_unchanged(s.g_before) : "", s.o_before.empty() ? "" : s.o->check_unchanged(s.o_before),
       s.x_before.empty() ? "" : s.x->check_unchanged(s.x_before),
       s.s_before.empty() ? "" : s.scale->check_unchanged(s.s_before)});

  oracle::ForwardResult& res = out.result;
  res.y = dense_bits(*s.yreg, R, D);
  // A variant that keeps no r (Variant::writes_rstd) is judged without it: an empty rstd is
  // skipped by the judge and by every property comparing two runs.
  if (v.writes_rstd) {
    res.rstd.resize(static_cast<std::size_t>(R));
    for (std::int64_t r = 0; r < R; ++r) res.rstd[static_cast<std::size_t>(r)] = s.rstd->value(0, r);
  }
  if (add) res.h = dense_bits(*s.x, R, D);
  if (quant && c.quant != rmsnorm::Quant::static_scale) {
    const std::int64_t n = c.quant == rmsnorm::Quant::dynamic_token ? R : R * rmsnorm::quant_groups(D);
    res.scale.resize(static_cast<std::size_t>(n));
    for (std::int64_t i = 0; i < n; ++i) res.scale[static_cast<std::size_t>(i)] = s.scale->value(0, i);
  }
}

}  // namespace

RawForward execute_forward(const rmsnorm::Variant& v, const oracle::ForwardCase& c, const Layout& L) {
  return execute_case<ForwardSetup, RawForward>(v, c, L, v.run_forward, "forward", prepare_forward, collect_forward);
}

TimedRun time_forward(const rmsnorm::Variant& v, const std::vector<oracle::ForwardCase>& cases, const Layout& L) {
  return time_cases<ForwardSetup, RawForward>(v, cases, L, v.run_forward, "forward", prepare_forward, collect_forward,
                                              judge_forward);
}

Outcome run_forward(const rmsnorm::Variant& v, const oracle::ForwardCase& c, const Layout& layout) {
  Outcome out;
  RawForward raw = execute_forward(v, c, layout);
  out.status = raw.status;
  out.guard_violation = raw.guard_violation;
  if (!out.status.ok()) return out;
  out.verdict = judge_forward(v, c, raw.result);
  return out;
}

oracle::Verdict judge_forward(const rmsnorm::Variant& v, const oracle::ForwardCase& c, const oracle::ForwardResult& got) {
  PhaseClock clock(Phase::judge);
  rmsnorm::AccumShape shape;
  const Status s = rmsnorm::judged_row_shape(v, c.dim, shape);
  if (!s.ok()) {
    oracle::Verdict refused;
    refused.pass = false;
    refused.first_failure = v.name + ": " + s.reason;
    return refused;
  }
  return oracle::check_forward(c, got, shape);
}

oracle::Verdict judge_backward(const rmsnorm::Variant& v, const oracle::BackwardCase& c,
                               const oracle::BackwardResult& got) {
  PhaseClock clock(Phase::judge);
  rmsnorm::AccumShape rs, ds;
  Status s = rmsnorm::judged_row_shape(v, c.dim, rs);
  if (s.ok()) s = rmsnorm::judged_dg_shape(v, c.rows, ds);
  if (!s.ok()) {
    oracle::Verdict refused;
    refused.pass = false;
    refused.first_failure = v.name + ": " + s.reason;
    return refused;
  }
  return oracle::check_backward(c, got, rs, ds);
}

namespace {

// A backward case laid out in its own buffers and uploaded, as ForwardSetup.
struct BackwardSetup {
  std::unique_ptr<Region> x, dy, dx, dres, g, rstd, dg, ws;
  Region* dxreg = nullptr;
  std::vector<Region*> all;
  std::vector<unsigned char> x_before, dy_before, g_before, dres_before, rstd_before;
  rmsnorm::BackwardArgs a;
};

Status prepare_backward(const rmsnorm::Variant& v, const oracle::BackwardCase& c, const Layout& L, BackwardSetup& s) {
  const std::int64_t R = c.rows, D = c.dim;
  const bool add = !c.dresidual.empty();
  const bool want_dg = c.convention != rmsnorm::Convention::no_weight;
  const Memory where = v.memory;

  s.x = std::make_unique<Region>("x", where, R, D, D + L.x_pad, c.x_type, L.x_offset);
  fill(*s.x, c.x, R, D);
  s.dy = std::make_unique<Region>("dy", where, R, D, D + L.dy_pad, c.x_type, L.dy_offset);
  fill(*s.dy, c.dy, R, D);
  s.dxreg = s.dy.get();
  if (!L.in_place) {
    s.dx = std::make_unique<Region>("dx", where, R, D, D + L.dx_pad, c.x_type, L.dx_offset);
    s.dxreg = s.dx.get();
  }
  if (add) {
    s.dres = std::make_unique<Region>("dresidual", where, R, D, D + L.dres_pad, c.x_type, L.dres_offset);
    fill(*s.dres, c.dresidual, R, D);
  }
  if (c.convention != rmsnorm::Convention::no_weight) {
    s.g = std::make_unique<Region>("g", where, 1, D, D, c.g_type, L.g_offset);
    fill(*s.g, c.g, 1, D);
  }
  s.rstd = std::make_unique<Region>("rstd", where, 1, R, R, DType::f32, 0);
  for (std::int64_t r = 0; r < R; ++r) s.rstd->set(0, r, c.rstd[static_cast<std::size_t>(r)]);
  if (want_dg) s.dg = std::make_unique<Region>("dg", where, 1, D, D, c.dg_type, 0);
  const std::size_t wbytes = v.workspace_bytes ? v.workspace_bytes(R, D) : 0;
  if (wbytes > 0) s.ws = std::make_unique<Region>("workspace", where, 1, static_cast<std::int64_t>(wbytes),
                                                  static_cast<std::int64_t>(wbytes), DType::e4m3, 0);

  s.all = {s.x.get(), s.dy.get(), s.dx.get(), s.dres.get(), s.g.get(), s.rstd.get(), s.dg.get(), s.ws.get()};
  const Status up = for_each_region(s.all, &Region::upload);
  if (!up.ok()) return up;
  s.x_before = s.x->snapshot();
  if (!L.in_place) s.dy_before = s.dy->snapshot();
  if (s.g) s.g_before = s.g->snapshot();
  if (s.dres) s.dres_before = s.dres->snapshot();
  s.rstd_before = s.rstd->snapshot();

  rmsnorm::BackwardArgs& a = s.a;
  a.rows = R;
  a.dim = D;
  a.x = {s.x->target(), c.x_type, D + L.x_pad};
  a.dy = {s.dy->target(), c.x_type, D + L.dy_pad};
  a.dx = {s.dxreg->target(), c.x_type, L.in_place ? D + L.dy_pad : D + L.dx_pad};
  if (add) a.dresidual = {s.dres->target(), c.x_type, D + L.dres_pad};
  a.g = s.g ? s.g->target() : nullptr;
  a.g_type = c.g_type;
  a.rstd = static_cast<const float*>(s.rstd->target());
  a.dg = s.dg ? s.dg->target() : nullptr;
  a.dg_type = c.dg_type;
  a.eps = c.eps;
  a.convention = c.convention;
  a.workspace = s.ws ? s.ws->target() : nullptr;
  a.workspace_bytes = wbytes;
  return Status::success();
}

void collect_backward(const rmsnorm::Variant&, const oracle::BackwardCase& c, BackwardSetup& s, RawBackward& out) {
  const std::int64_t R = c.rows, D = c.dim;
  // The workspace is scratch: only its guards are checked.
  out.guard_violation = first_nonempty(
      {s.x->check_poison(), s.dy->check_poison(), s.dx ? s.dx->check_poison() : "",
       s.dres ? s.dres->check_poison() : "", s.g ? s.g->check_poison() : "", s.rstd->check_poison(),
       s.dg ? s.dg->check_poison() : "", s.x->check_unchanged(s.x_before),
       s.dy_before.empty() ? "" : s.dy->check_unchanged(s.dy_before), s.g ? s.g->check_unchanged(s.g_before) : "",
       s.dres ? s.dres->check_unchanged(s.dres_before) : "", s.rstd->check_unchanged(s.rstd_before)});
  if (s.ws) {
    // Guards of the workspace: its live bytes are scratch, anything around them is not.
    std::string w = s.ws->check_poison();
    if (!w.empty()) out.guard_violation = first_nonempty({out.guard_violation, w});
  }
  oracle::BackwardResult& res = out.result;
  res.dx = dense_bits(*s.dxreg, R, D);
  if (s.dg) res.dg = dense_bits(*s.dg, 1, D);
}

}  // namespace

RawBackward execute_backward(const rmsnorm::Variant& v, const oracle::BackwardCase& c, const Layout& L) {
  return execute_case<BackwardSetup, RawBackward>(v, c, L, v.run_backward, "backward", prepare_backward,
                                                  collect_backward);
}

TimedRun time_backward(const rmsnorm::Variant& v, const std::vector<oracle::BackwardCase>& cases, const Layout& L) {
  return time_cases<BackwardSetup, RawBackward>(v, cases, L, v.run_backward, "backward", prepare_backward,
                                                collect_backward, judge_backward);
}

Outcome run_backward(const rmsnorm::Variant& v, const oracle::BackwardCase& c, const Layout& layout) {
  Outcome out;
  RawBackward raw = execute_backward(v, c, layout);
  out.status = raw.status;
  out.guard_violation = raw.guard_violation;
  if (!out.status.ok()) return out;
  out.verdict = judge_backward(v, c, raw.result);
  return out;
}


oracle::ForwardCase first_rows(const oracle::ForwardCase& c, std::int64_t k) {
  oracle::ForwardCase head = c;
  const auto n = static_cast<std::size_t>(k * c.dim);
  head.rows = k;
  head.x.resize(n);
  if (!head.o.empty()) head.o.resize(n);
  return head;
}

oracle::BackwardCase first_rows(const oracle::BackwardCase& c, std::int64_t k) {
  oracle::BackwardCase head = c;
  const auto n = static_cast<std::size_t>(k * c.dim);
  head.rows = k;
  head.x.resize(n);
  head.dy.resize(n);
  if (!head.dresidual.empty()) head.dresidual.resize(n);
  head.rstd.resize(static_cast<std::size_t>(k));
  return head;
}

}  // namespace harness
