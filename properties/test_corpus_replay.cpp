// Corpus replay: every corpora/**/*.case is parsed and run on every matching variant (its
// property's check, or the oracle's acceptance plus the expectations it carries).
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include "checks.h"
#include "harness/case_file.h"
#include "harness/catch.h"
#include "rmsnorm/variant.h"

#ifndef RMSNORM_CORPORA_DIR
#error "RMSNORM_CORPORA_DIR must name the corpora directory"
#endif

namespace {

std::vector<std::filesystem::path> corpus_files() {
  std::vector<std::filesystem::path> files;
  std::error_code ec;
  for (auto it = std::filesystem::recursive_directory_iterator(RMSNORM_CORPORA_DIR, ec);
       !ec && it != std::filesystem::recursive_directory_iterator(); it.increment(ec))
    if (it->is_regular_file() && it->path().extension() == ".case") files.push_back(it->path());
  std::sort(files.begin(), files.end());
  return files;
}

void replay(rmsnorm::Memory where) {
  const auto files = corpus_files();
  REQUIRE_FALSE(files.empty());
  int runs = 0;
  for (const auto& path : files) {
    std::ifstream in(path);
    std::stringstream text;
    text << in.rdbuf();
    harness::Case c;
    std::string error;
    INFO("file: " << path.string());
    const bool parsed = harness::parse_case(text.str(), c, error);
    INFO("parse error: " << error);
    REQUIRE(parsed);
    const properties::CheckResult o = properties::check_oracle_case(c);
    INFO("oracle: " << o.message);
    CHECK(o.kind == properties::CheckResult::Kind::pass);
    for (const rmsnorm::Variant* v : properties::variants_for(c)) {
      if (v->memory != where) continue;
      harness::Case on = c;
      on.variant = v->name;
      const properties::CheckResult r = properties::check_case(on, *v);
      std::cout << path.filename().string() << " on " << v->name << ": "
                << (r.kind == properties::CheckResult::Kind::pass       ? "pass"
                    : r.kind == properties::CheckResult::Kind::rejected ? "rejected (" + r.message + ")"
                    : r.kind == properties::CheckResult::Kind::fail     ? "FAIL: " + r.message
                                                                        : "not applicable (" + r.message + ")")
                << std::endl;
      INFO(v->name << ": " << r.message << "\nREPRODUCE: " << harness::one_line(on));
      CHECK((r.kind == properties::CheckResult::Kind::pass || r.kind == properties::CheckResult::Kind::rejected));
      ++runs;
    }
  }
  CHECK(runs > 0);
}

}  // namespace

TEST_CASE("every corpus case replays within acceptance on every matching host variant", "[corpus]") {
  replay(rmsnorm::Memory::host);
}

TEST_CASE("every corpus case replays within acceptance on every matching CUDA variant", "[corpus][gpu]") {
  const rmsnorm::Status s = rmsnorm::device_status();
  if (!s.ok()) FAIL("GPU corpus replay not run: " << s.reason);
  replay(rmsnorm::Memory::device);
}
