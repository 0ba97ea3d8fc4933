// `mutants`: the harness proves it can fail (docs/mutants.md). Every registered mutant ("mutant.*":
// the production code with one switch flipped) faces the property suite and the corpus; the
// kill matrix says which property killed which mutant, after how many cases, with the
// counterexample line. A surviving mutant is a failure (exit 1): a missing property, or an
// equivalent mutant that must be argued in the code.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <map>
#include <mutex>
#include <set>
#include <thread>

#include "certification.h"
#include "command_line.h"
#include "commands.h"
#include "device_info.h"
#include "git_commit.h"
#include "json_writer.h"
#include "junit.h"

namespace cert {

namespace {

bool kills(PropertyVerdict v) {
  return v == PropertyVerdict::fail || v == PropertyVerdict::crashed || v == PropertyVerdict::timed_out;
}

struct MutantRow {
  const rmsnorm::Variant* variant = nullptr;
  SuiteRun suite;
  CorpusRun corpus;
  bool skipped = false;
  std::string skip_reason;
  double seconds = 0;
  bool killed() const {
    for (const auto& r : suite.results)
      if (kills(r.verdict)) return true;
    return corpus.failed > 0;
  }
};

std::string cell(const MutantRow& m, const std::string& id) {
  bool any = false, na = true;
  for (const auto& r : m.suite.results) {
    if (r.id != id) continue;
    any = true;
    if (kills(r.verdict)) return r.verdict == PropertyVerdict::fail ? "K" : r.verdict == PropertyVerdict::crashed ? "C" : "T";
    if (r.verdict != PropertyVerdict::not_applicable && r.verdict != PropertyVerdict::not_exercised) na = false;
  }
  if (!any) return " ";
  return na ? "-" : ".";
}

// --first-kill: every mutant's property tests in one pool of `jobs` children, property by
// property across the mutants (the first properties kill most), and nothing more is started for a
// mutant once it is killed. A mutant that survives every property then replays the corpus.
void run_pooled(std::vector<MutantRow>& rows, std::int64_t budget, int jobs, double timeout) {
  const SuiteListing listings[2] = {list_property_tests(false), list_property_tests(true)};
  struct Task { std::size_t row; const PropertyExecutable* exe; const std::string* name; };
  std::vector<Task> tasks;
  std::vector<std::size_t> live;
  for (std::size_t m = 0; m < rows.size(); ++m) {
    if (rows[m].skipped) continue;
    live.push_back(m);
    rows[m].suite.problems = listings[rows[m].variant->memory == rmsnorm::Memory::device].problems;
  }
  std::size_t longest = 0;
  for (const SuiteListing& l : listings) longest = std::max(longest, l.count());
  for (std::size_t k = 0; k < longest; ++k)
    for (std::size_t m : live) {
      const SuiteListing& l = listings[rows[m].variant->memory == rmsnorm::Memory::device];
      std::size_t at = k;
      for (const auto& [exe, names] : l.tests) {
        if (at < names.size()) {
          tasks.push_back({m, &exe, &names[at]});
          break;
        }
        at -= names.size();
      }
    }
  std::vector<char> dead(rows.size(), 0);
  std::atomic<std::size_t> next{0};
  std::mutex mu;
  std::size_t finished = 0, killed = 0;
  Progress progress("[mutants] ");
  progress.phase();
  auto worker = [&] {
    for (;;) {
      const std::size_t i = next.fetch_add(1);
      if (i >= tasks.size()) return;
      const Task& t = tasks[i];
      {
        std::lock_guard<std::mutex> lock(mu);
        if (dead[t.row]) {
          ++finished;
          continue;
        }
      }
      PropertyResult r = run_property_test(*t.exe, *t.name, rows[t.row].variant->name, budget, timeout);
      std::lock_guard<std::mutex> lock(mu);
      ++finished;
      rows[t.row].seconds += r.seconds;
      if (kills(r.verdict) && !dead[t.row]) {
        dead[t.row] = 1;
        ++killed;
      }
      rows[t.row].suite.results.push_back(std::move(r));
      progress.step(std::to_string(killed) + " of " + std::to_string(live.size()) + " killed, property tests", finished,
                    tasks.size());
    }
  };
  const int n = std::max(1, std::min<int>(jobs, static_cast<int>(tasks.size())));
  std::vector<std::thread> threads;
  for (int k = 1; k < n; ++k) threads.emplace_back(worker);
  worker();
  for (auto& t : threads) t.join();
  progress.done();
}

// The command line of `mutants`.
struct MutantsOptions {
  std::int64_t budget = 100, jobs = std::max(1u, std::thread::hardware_concurrency());
  std::string pattern = "mutant.*", out_dir = "mutants", corpus = default_corpus_dir(), junit_path;
  double timeout = 600;
  bool first_kill = false;
};

// False when the command ends here (--help, a usage error), with its exit status in `exit_status`.
bool parse_options(const Args& args, MutantsOptions& o, int& exit_status) {
  CommandLine cl("mutants",
                 "mutants [--budget N] [--pattern GLOB] [--out DIR] [--jobs J] [--first-kill] [--junit FILE]",
                 "Runs the property suite (RMSNORM_PROP_CASES=N) and the corpus against every mutant variant\n"
                 "(host mutants always, device mutants when a GPU is present) and prints the kill matrix:\n"
                 "K killed by a failed check, C by a crash, T by a time-out, . survived, - not applicable.\n"
                 "Writes DIR/kill_matrix.md and .json. Exit 1 when any mutant survives.");
  cl.option("--budget", &o.budget, "N", "cases per property (RMSNORM_PROP_CASES, default 100)", 1, 100000000);
  cl.option("--pattern", &o.pattern, "GLOB", "which mutants (default mutant.*)");
  cl.option("--out", &o.out_dir, "DIR", "where the kill matrix goes (default ./mutants)");
  cl.option("--corpus", &o.corpus, "DIR", "corpus to replay (default: this tree's corpora/)");
  cl.option("--jobs", &o.jobs, "J", "property tests run J at a time (default: cores)", 1, 256);
  cl.option("--timeout", &o.timeout, "S", "limit per property test in seconds (default 600)");
  cl.flag("--first-kill", &o.first_kill, "stop a mutant's run at its first kill (faster; the matrix is then partial)");
  cl.option("--junit", &o.junit_path, "FILE", "also write JUnit XML: a test case per mutant, failed when it survives");
  const auto stop = [&](const std::string& error) {
    exit_status = cl.usage_exit(error);
    return false;
  };
  std::string error;
  if (!cl.parse(args, error)) return stop(error);
  if (cl.given("--corpus") && !std::filesystem::is_directory(o.corpus)) {
    std::fprintf(stderr, "rmsnorm-cert mutants: --corpus %s: no such folder\n", o.corpus.c_str());
    exit_status = kExitError;
    return false;
  }
  if (o.pattern.compare(0, 7, "mutant.") != 0 && o.pattern != "*")
    return stop("--pattern must select mutants (names start with 'mutant.'), got '" + o.pattern + "'");
  return true;
}

// A row per registered mutant that `pattern` selects, in registry order.
std::vector<MutantRow> collect_rows(const std::string& pattern) {
  std::vector<MutantRow> rows;
  for (const rmsnorm::Variant* v : rmsnorm::match_variants(pattern))
    if (v->is_mutant()) rows.push_back({v, {}, {}, false, "", 0});
  return rows;
}

// The console line of a mutant once it has run: its verdict, the checks that killed it, the time.
void print_verdict(const MutantRow& m) {
  std::vector<std::string> killers;
  for (const auto& r : m.suite.results)
    if (kills(r.verdict)) killers.push_back(r.id);
  if (m.corpus.failed > 0) killers.push_back("corpus");
  std::string by;
  for (const auto& k : killers) by += (by.empty() ? "" : " ") + k;
  std::printf("%-8s %-52s %s (%.1f s)\n", m.killed() ? "killed" : "SURVIVED", m.variant->name.c_str(),
              by.empty() ? "no property failed" : ("by " + by).c_str(), m.seconds);
  for (const std::string& p : m.suite.problems) std::printf("         problem: %s\n", p.c_str());
  std::fflush(stdout);
}

// Device mutants are skipped without a GPU; every other one faces the property suite (with
// --first-kill pooled across the mutants) and then the corpus (with --first-kill only when no
// property killed it).
void run_rows(std::vector<MutantRow>& rows, const MutantsOptions& o, const DeviceInfo& device) {
  for (MutantRow& m : rows) {
    if (m.variant->memory == rmsnorm::Memory::device && !device.available) {
      m.skipped = true;
      m.skip_reason = device.reason;
    }
  }
  const int jobs = static_cast<int>(o.jobs);
  if (o.first_kill) run_pooled(rows, o.budget, jobs, o.timeout);
  for (MutantRow& m : rows) {
    if (m.skipped) continue;
    const auto t0 = std::chrono::steady_clock::now();
    Progress progress("[" + m.variant->name + "] ");
    if (!o.first_kill) m.suite = run_suite(*m.variant, o.budget, jobs, o.timeout, progress, false);
    if (!(o.first_kill && m.killed())) m.corpus = replay_corpus(*m.variant, o.corpus, progress, true);
    progress.done();
    m.seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    print_verdict(m);
  }
}

// Columns: property ids in first-seen order, then the corpus.
std::vector<std::string> property_columns(const std::vector<MutantRow>& rows) {
  std::vector<std::string> ids;
  std::set<std::string> seen;
  for (const MutantRow& m : rows)
    for (const auto& r : m.suite.results)
      if (seen.insert(r.id).second) ids.push_back(r.id);
  return ids;
}

// What killed a mutant: the properties ("(crash)" / "(time-out)" marked), the corpus; "-" if nothing.
std::string killed_by(const MutantRow& m, const std::vector<std::string>& ids) {
  std::string out;
  for (const auto& id : ids) {
    const std::string c = cell(m, id);
    if (c != "K" && c != "C" && c != "T") continue;
    out += (out.empty() ? "" : " ") + id + (c == "C" ? "(crash)" : c == "T" ? "(time-out)" : "");
  }
  if (m.corpus.failed > 0) out += std::string(out.empty() ? "" : " ") + "corpus";
  return out.empty() ? std::string("-") : out;
}

// A mutant's object in kill_matrix.json.
void mutant_json(JsonWriter& j, const MutantRow& m) {
  j.begin_object().value("mutant", m.variant->name).value("switch", rmsnorm::to_string(m.variant->mutant));
  j.value("description", rmsnorm::mutant_description(m.variant->mutant));
  if (m.skipped) {
    j.value("verdict", "skipped").value("reason", m.skip_reason).end_object();
    return;
  }
  j.value("verdict", m.killed() ? "killed" : "survived").value("seconds", m.seconds);
  j.begin_array("properties");
  for (const auto& r : m.suite.results) {
    j.begin_object().value("id", r.id).value("name", r.name).value("verdict", to_string(r.verdict));
    j.value("killed", kills(r.verdict));
    j.value("assertions_passed", r.assertions_passed).value("assertions_failed", r.assertions_failed);
    if (r.failed_after >= 0) j.value("after_cases", r.failed_after);
    j.value("message", r.message).value("counterexample", r.counterexample).end_object();
  }
  j.end_array();
  j.begin_object("corpus").value("files", m.corpus.files).value("failed", m.corpus.failed);
  if (!m.corpus.failures.empty())
    j.value("first_failure", m.corpus.failures.front().file + ": " + m.corpus.failures.front().reason)
        .value("repro", m.corpus.failures.front().repro);
  j.end_object().end_object();
}

// A mutant's section of the Markdown's counterexamples: each kill with its counterexample.
std::string counterexamples_md(const MutantRow& m) {
  std::string md = "\n### `" + m.variant->name + "` — " + (m.killed() ? "killed" : "**SURVIVED**") + "\n\n" +
                   rmsnorm::mutant_description(m.variant->mutant) + "\n\n";
  for (const auto& r : m.suite.results)
    if (kills(r.verdict))
      md += "- " + r.id + " " + to_string(r.verdict) +
            (r.failed_after >= 0 ? " after " + std::to_string(r.failed_after) + " cases" : "") + ": " + r.message +
            (r.counterexample.empty() ? "" : "\n  `" + r.counterexample + "`") + "\n";
  if (!m.corpus.failures.empty())
    md += "- corpus: `" + m.corpus.failures.front().file + "`: " + m.corpus.failures.front().reason + "\n  `" +
          m.corpus.failures.front().repro + "`\n";
  return md;
}

// The kill matrix as kill_matrix.md, .json and JUnit. `md` ends with the table: the summary line
// (known only once the matrix is drawn) and then `details`, the counterexamples, follow it.
struct KillMatrix {
  std::string md, details, json;
  JUnitSuite junit{"rmsnorm-cert mutants", {}};
  int total = 0, killed = 0;  // of the mutants that ran
};

// Prints the kill matrix (a row per mutant that ran, a line per reason others were skipped for)
// and draws it as a KillMatrix.
KillMatrix kill_matrix(const std::vector<MutantRow>& rows, std::int64_t budget, const DeviceInfo& device) {
  using R = JUnitCase::Result;
  const std::vector<std::string> ids = property_columns(rows);
  KillMatrix km;
  km.md = "# Kill matrix\n\nCommit `" + std::string(RMSNORM_CERT_GIT_COMMIT) + "`" +
          (RMSNORM_CERT_GIT_DIRTY ? " (with local changes)" : "") + ", " + utc_now() + ", budget " +
          std::to_string(budget) + " cases per property, device: " +
          (device.available ? device.name : "none (" + device.reason + ")") +
          ".\n\nOne row per mutant: the checks that killed it (a failed property, a crash, a time-out, "
          "the corpus).\n\n| mutant | verdict | killed by |\n|---|---|---|\n";
  std::printf("\nkill matrix:\n%-60s %-9s %s\n", "mutant", "verdict", "killed by");
  std::map<std::string, std::vector<std::string>> skipped_by_reason;  // said once per reason
  JsonWriter j;
  j.begin_object().value("commit", RMSNORM_CERT_GIT_COMMIT).value("date", utc_now()).value("budget", budget);
  j.value("device", device.available ? device.name : "").value("device_reason", device.reason);
  j.begin_array("mutants");
  for (const MutantRow& m : rows) {
    mutant_json(j, m);
    if (m.skipped) {
      skipped_by_reason[m.skip_reason].push_back(m.variant->name);
      km.junit.cases.push_back({"mutants", m.variant->name, 0, R::skipped, "not run here: " + m.skip_reason, ""});
      continue;
    }
    ++km.total;
    km.killed += m.killed();
    const std::string by = killed_by(m, ids);
    std::printf("%-60s %-9s %s\n", m.variant->name.c_str(), m.killed() ? "killed" : "SURVIVED", by.c_str());
    km.md += "| `" + m.variant->name + "` | " + (m.killed() ? "killed" : "**SURVIVED**") + " | " + by + " |\n";
    km.junit.cases.push_back({"mutants", m.variant->name, m.seconds, m.killed() ? R::pass : R::fail,
                              m.killed() ? "killed by " + by : std::string("SURVIVED every property and the corpus"),
                              rmsnorm::mutant_description(m.variant->mutant)});
    km.details += counterexamples_md(m);
  }
  for (const auto& [reason, names] : skipped_by_reason) {
    std::string list;
    for (const std::string& n : names) list += (list.empty() ? "" : ", ") + n;
    std::printf("%zu mutant%s not run here: %s\n    %s\n", names.size(), names.size() == 1 ? "" : "s", reason.c_str(),
                list.c_str());
    km.md += "| " + std::to_string(names.size()) + " mutants | not run here | " + reason + ": " + list + " |\n";
  }
  j.end_array().value("killed", km.killed).value("total", km.total).end_object();
  km.json = j.str();
  return km;
}

// Per mutant that ran: the first killer with its counterexample, for the console.
void print_first_kills(const std::vector<MutantRow>& rows) {
  std::printf("\n");
  for (const MutantRow& m : rows) {
    if (m.skipped) continue;
    const PropertyResult* first = nullptr;
    for (const auto& r : m.suite.results)
      if (kills(r.verdict)) {
        first = &r;
        break;
      }
    if (first) {
      std::printf("%s: killed by %s%s: %s\n", m.variant->name.c_str(), first->id.c_str(),
                  first->failed_after >= 0 ? (" after " + std::to_string(first->failed_after) + " cases").c_str() : "",
                  first->message.substr(0, 200).c_str());
      if (!first->counterexample.empty()) std::printf("    %s\n", first->counterexample.c_str());
    } else if (m.corpus.failed > 0) {
      std::printf("%s: killed by the corpus: %s\n    %s\n", m.variant->name.c_str(),
                  m.corpus.failures.front().file.c_str(), m.corpus.failures.front().repro.c_str());
    } else {
      std::printf("%s: SURVIVED every property and the corpus\n", m.variant->name.c_str());
    }
  }
}

// DIR/kill_matrix.md and .json, then the JUnit file if one was asked for; false (said on stderr)
// at the first that could not be written.
bool write_reports(const MutantsOptions& o, const KillMatrix& km) {
  std::string error;
  if (!write_text_file(o.out_dir + "/kill_matrix.md", km.md, error) ||
      !write_text_file(o.out_dir + "/kill_matrix.json", km.json, error) ||
      (!o.junit_path.empty() && !write_junit(o.junit_path, {km.junit}, error))) {
    std::fprintf(stderr, "rmsnorm-cert mutants: %s\n", error.c_str());
    return false;
  }
  return true;
}

// Every mutant that ran must be killed, and a run where none could run proves nothing.
int exit_status(const KillMatrix& km) {
  if (km.total == 0) {
    std::printf("mutants: none could run on this machine\n");
    return kExitFailed;
  }
  return km.killed == km.total ? kExitOk : kExitFailed;
}

}  // namespace

int run_mutants(const Args& args) {
  MutantsOptions o;
  int status = kExitOk;
  if (!parse_options(args, o, status)) return status;
  std::vector<MutantRow> rows = collect_rows(o.pattern);
  if (rows.empty()) {
    std::fprintf(stderr, "rmsnorm-cert mutants: no mutant matches '%s' (rmsnorm-cert list mutants)\n",
                 o.pattern.c_str());
    return kExitUsage;
  }
  const DeviceInfo device = device_info();
  std::error_code ec;
  std::filesystem::create_directories(o.out_dir, ec);
  if (ec) {
    std::fprintf(stderr, "rmsnorm-cert mutants: cannot create %s: %s\n", o.out_dir.c_str(), ec.message().c_str());
    return kExitError;
  }
  std::printf("mutants: %zu registered matching '%s'; budget %lld cases per property; device: %s\n", rows.size(),
              o.pattern.c_str(), static_cast<long long>(o.budget),
              device.available ? device.name.c_str() : ("none (" + device.reason + ")").c_str());
  const auto t_all = std::chrono::steady_clock::now();
  run_rows(rows, o, device);

  KillMatrix km = kill_matrix(rows, o.budget, device);
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t_all).count();
  char summary[160];
  std::snprintf(summary, sizeof summary, "%d of %d mutants killed (%.1f s)", km.killed, km.total, secs);
  km.md += "\n**" + std::string(summary) + "**\n\n## Counterexamples\n" + km.details;
  print_first_kills(rows);
  std::printf("\nmutants: %s; kill matrix in %s/kill_matrix.md\n", summary, o.out_dir.c_str());
  if (!write_reports(o, km)) return kExitError;
  return exit_status(km);
}

}  // namespace cert
