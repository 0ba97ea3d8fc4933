// The suite proves it can fail (docs/mutants.md): the properties run, with the default budget,
// against every registered host mutant (the CUDA mutants: ctest's mutants.gpu, which isolates
// each property run in a child process); each mutant must be killed by at least one property, with its
// shrunk replay line printed. By default a mutant stops at its first kill (the kill list, minutes);
// RMSNORM_MUTANT_MATRIX=1 runs every property on every mutant (the full kill matrix).
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <map>
#include <string>
#include <vector>

#include "budget.h"
#include "harness/catch.h"
#include "rc_support.h"
#include "rmsnorm/variant.h"

namespace {

void kill_matrix(rmsnorm::Memory where) {
  const int cases = properties::cases_for(false);
  const bool full_matrix = std::getenv("RMSNORM_MUTANT_MATRIX") != nullptr;
  std::vector<const rmsnorm::Variant*> mutants;
  for (const rmsnorm::Variant& v : rmsnorm::registry())
    if (v.is_mutant() && v.memory == where) mutants.push_back(&v);
  if (mutants.empty()) FAIL("no " << (where == rmsnorm::Memory::host ? "host" : "CUDA") << " mutants registered");
  std::string matrix = "kill matrix (K killed, . survived, - not applicable, blank not run after the first kill):\n";
  std::string header = "                                      ";
  for (const auto& p : properties::catalog())
    if (!p.oracle_only) {
      char col[8];
      std::snprintf(col, sizeof col, "%-4s", p.id.c_str());
      header += col;
    }
  matrix += header + "\n";
  std::vector<std::string> survivors;
  for (const rmsnorm::Variant* m : mutants) {
    char name[48];
    std::snprintf(name, sizeof name, "%-38s", m->name.c_str());
    std::string row = name;
    int kills = 0;
    for (const auto& p : properties::catalog()) {
      if (p.oracle_only) continue;
      if (!properties::applies(p, *m)) {
        row += "-   ";
        continue;
      }
      if (kills > 0 && !full_matrix) {
        row += "    ";
        continue;
      }
      const properties::RunReport r =
          properties::run_property(p, m, cases, properties::property_seed(p.id, m->name));
      if (r.failed) {
        ++kills;
        row += "K   ";
        std::cout << m->name << " killed by " << p.id << " after " << r.checked << " passing cases: " << r.failure
                  << "\n  REPRODUCE: " << r.reproduce << std::endl;
      } else {
        row += ".   ";
      }
    }
    matrix += row + "\n";
    if (kills == 0) survivors.push_back(m->name);
  }
  std::cout << matrix << std::flush;
  INFO(matrix);
  for (const std::string& s : survivors) {
    INFO("mutant survived every property: " << s);
    CHECK(false);
  }
}

}  // namespace

TEST_CASE("every host mutant is killed by some property within the default budget", "[mutants][slow]") {
  kill_matrix(rmsnorm::Memory::host);
}
