#include "property_suite.h"

#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <regex>
#include <sstream>

#include "build_info.h"
#include "harness/case_file.h"
#include "subprocess.h"
#include "xml_tree.h"

namespace cert {

const char* to_string(PropertyVerdict v) {
  switch (v) {
    case PropertyVerdict::pass: return "pass";
    case PropertyVerdict::fail: return "FAIL";
    case PropertyVerdict::not_applicable: return "n/a";
    case PropertyVerdict::not_exercised: return "NOT EXERCISED";
    case PropertyVerdict::below_floor: return "BELOW FLOOR";
    case PropertyVerdict::crashed: return "CRASH";
    case PropertyVerdict::timed_out: return "TIMEOUT";
    case PropertyVerdict::missing: return "MISSING";
  }
  return "?";
}

std::size_t SuiteListing::count() const {
  std::size_t n = 0;
  for (const auto& t : tests) n += t.second.size();
  return n;
}

namespace {

std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> out;
  std::string cur;
  for (char c : s) {
    if (c == sep) {
      if (!cur.empty()) out.push_back(cur);
      cur.clear();
    } else {
      cur += c;
    }
  }
  if (!cur.empty()) out.push_back(cur);
  return out;
}

std::string basename_of(const std::string& path) {
  const std::size_t slash = path.find_last_of('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

std::string trim(const std::string& s) {
  std::size_t a = 0, b = s.size();
  while (a < b && std::isspace(static_cast<unsigned char>(s[a]))) ++a;
  while (b > a && std::isspace(static_cast<unsigned char>(s[b - 1]))) --b;
  return s.substr(a, b - a);
}

// Catch2 test specs treat , [ ] ~ * " and \ specially: escape them so a name matches exactly.
std::string escape_test_name(const std::string& name) {
  std::string out;
  for (char c : name) {
    if (c == ',' || c == '[' || c == ']' || c == '~' || c == '*' || c == '"' || c == '\\') out += '\\';
    out += c;
  }
  return out;
}

std::vector<std::string> list_names(const PropertyExecutable& exe, const std::string& filter, std::string& problem) {
  std::vector<std::string> argv = {exe.path};
#if RMSNORM_CERT_CATCH2_MAJOR >= 3
  argv.insert(argv.end(), {"--list-tests", "--verbosity", "quiet"});
#else
  argv.push_back("--list-test-names-only");
#endif
  if (!filter.empty()) argv.push_back(filter);
  const ChildResult r = run_child(argv, {}, 60);
  if (!r.exited_ok()) {
    problem = exe.target + ": listing its tests failed (" + r.describe() + ")";
    return {};
  }
  std::vector<std::string> names;
  std::istringstream in(r.out);
  std::string line;
  while (std::getline(in, line)) {
    line = trim(line);
    // Catch2 v2 ends with a count line when asked for names only in some builds; skip blanks
    // and anything that is clearly not a name.
    if (line.empty() || line.find("matching test case") != std::string::npos) continue;
    if (line.compare(0, 8, "SKIPPED:") == 0) {  // the shared test main without a device
      problem = exe.target + ": " + line;
      return {};
    }
    names.push_back(line);
  }
  return names;
}

std::string one_line(std::string s, std::size_t max_len = 400) {
  for (char& c : s)
    if (c == '\n' || c == '\r' || c == '\t') c = ' ';
  s = trim(s);
  if (s.size() > max_len) s = s.substr(0, max_len - 3) + "...";
  return s;
}

// Every failure text of a test case report, in document order.
std::vector<std::string> failure_texts(const XmlElement& tc) {
  std::vector<std::string> out;
  for (const XmlElement* e : tc.descendants("Expression")) {
    if (e->attribute_or("success", "true") != "false") continue;
    std::string text;
    for (const XmlElement* c : e->children_named("Original")) text += "REQUIRE(" + trim(c->text) + ")";
    for (const XmlElement* c : e->children_named("Expanded")) text += " with " + trim(c->text);
    out.push_back(text);
  }
  for (const char* kind : {"Failure", "Exception", "FatalErrorCondition", "Info", "Warning", "StdOut", "StdErr"})
    for (const XmlElement* e : tc.descendants(kind)) out.push_back(trim(e->text));
  return out;
}

// The reproducing line a property prints on failure: a line naming `rmsnorm-cert` (a replay or
// repro command), or one of the case file's one-line forms ("case ..."/"repro ...").
std::string find_counterexample(const std::vector<std::string>& texts) {
  // The suite prints "REPRODUCE: <one-line case>" (properties/rc_support.cpp): keep the case.
  for (const std::string& t : texts) {
    const std::size_t at = t.find("REPRODUCE: ");
    if (at == std::string::npos) continue;
    std::string line = t.substr(at + 11);
    const std::size_t nl = line.find('\n');
    if (nl != std::string::npos) line.erase(nl);
    return trim(line);
  }
  static const char* const kMarkers[] = {"rmsnorm-cert ", "--line", "counterexample:"};
  for (const char* marker : kMarkers)
    for (const std::string& t : texts) {
      std::istringstream in(t);
      std::string line;
      while (std::getline(in, line))
        if (line.find(marker) != std::string::npos) return one_line(line, 2000);
    }
  return "";
}

// The suite's report line, "P1 on host.reference: 60 cases asked, 58 checked, 2 rejected, 0 not
// applicable, ..." (properties/rc_support.cpp, describe()): its counts, each summed over the
// variants it names; `found` false when the text holds none.
struct ReportCounts {
  bool found = false;
  std::int64_t asked = 0, checked = 0, rejected = 0, not_applicable = 0;
  std::string first_rejection, not_applicable_reason;  // the reasons the report lists
};
ReportCounts find_report(const std::string& text) {
  static const std::regex kReport(R"(: (\d+) cases asked, (\d+) checked, (\d+) rejected, (\d+) not applicable)");
  static const std::regex kRejected(R"(\n +rejected (\d+)x: ([^\n]*))");
  static const std::regex kNotApplicable(R"(\n +not applicable \(last reason\): ([^\n]*))");
  ReportCounts r;
  for (std::sregex_iterator it(text.begin(), text.end(), kReport), end; it != end; ++it) {
    r.found = true;
    r.asked += std::atoll((*it)[1].str().c_str());
    r.checked += std::atoll((*it)[2].str().c_str());
    r.rejected += std::atoll((*it)[3].str().c_str());
    r.not_applicable += std::atoll((*it)[4].str().c_str());
  }
  std::smatch m;
  if (std::regex_search(text, m, kRejected)) r.first_rejection = m[2].str();
  if (std::regex_search(text, m, kNotApplicable)) r.not_applicable_reason = m[1].str();
  return r;
}

// The line the suite prints for a property that cannot apply to the variant ("P7: not applicable
// to plugin.x: it claims none of the input types drawn (f16)"), or "".
std::string find_not_applicable_line(const std::string& text) {
  static const std::regex kLine(R"((^|\n)([^\n]*: not applicable to [^\n]*))");
  std::smatch m;
  return std::regex_search(text, m, kLine) ? trim(m[2].str()) : std::string();
}

std::int64_t find_failed_after(const std::vector<std::string>& texts) {
  // RapidCheck: "Falsifiable after 12 tests and 3 shrinks"; our generators: "after 12 cases",
  // "case 12 of 100", "at case 12".
  static const std::regex kPatterns[] = {std::regex(R"(after (\d+) (tests?|cases?))"),
                                         std::regex(R"(case (\d+) (of|/) ?\d+)"), std::regex(R"(at case (\d+))")};
  for (const std::string& t : texts)
    for (const auto& re : kPatterns) {
      std::smatch m;
      if (std::regex_search(t, m, re)) return std::atoll(m[1].str().c_str());
    }
  return -1;
}

}  // namespace

std::string property_id(const std::string& test_name) {
  // "P4: scaling x ..." -> "P4"; "P2/P5/P6/P7 examples: ..." -> "P2/P5/P6/P7 examples";
  // a name without such a label -> its first words.
  const std::size_t colon = test_name.find(": ");
  if (colon != std::string::npos && colon <= 24) return test_name.substr(0, colon);
  return test_name.size() <= 24 ? test_name : test_name.substr(0, 21) + "...";
}

std::vector<PropertyExecutable> property_executables() {
  std::vector<PropertyExecutable> out;
  if (const char* env = std::getenv("RMSNORM_PROPERTY_EXES"); env && *env) {
    for (const std::string& p : split(env, ':')) out.push_back({basename_of(p), p});
    return out;
  }
  // "target=path;target=path", written by CMake at generate time.
  for (const std::string& item : split(RMSNORM_CERT_PROPERTY_EXES, ';')) {
    const std::size_t eq = item.find('=');
    if (eq == std::string::npos) continue;
    out.push_back({item.substr(0, eq), item.substr(eq + 1)});
  }
  return out;
}

SuiteListing list_property_tests(bool device_variant) {
  SuiteListing listing;
  const auto exes = property_executables();
  if (exes.empty()) listing.problems.push_back("no property test executable in this build (properties/ defines none)");
  for (const PropertyExecutable& exe : exes) {
    if (!is_executable(exe.path)) {
      listing.problems.push_back(exe.target + ": not built (" + exe.path + " missing; build it with ninja " +
                                 exe.target + ")");
      continue;
    }
    std::string problem;
    // Host variants: the [property] tests without [gpu]; device variants: the [property][gpu]
    // instantiations. [slow] is the nightly budget: RMSNORM_PROP_CASES sets the count instead.
    const std::string filter = device_variant ? "[property][gpu]~[slow]" : "[property]~[slow]~[gpu]";
    std::vector<std::string> names = list_names(exe, filter, problem);
    if (!problem.empty()) listing.problems.push_back(problem);
    if (!names.empty()) listing.tests.emplace_back(exe, std::move(names));
  }
  return listing;
}

void classify_counted(PropertyResult& res, const std::string& not_applicable_line, const std::string& first_rejection,
                      const std::string& not_applicable_reason) {
  if (res.cases_checked == 0 && res.cases_rejected > 0) {
    // Every draw declined by can_implement (a width or layout the variant does not take): the
    // property never ran on this variant, though it has the op — a gap in its certificate.
    res.verdict = PropertyVerdict::not_exercised;
    if (res.message.empty()) res.message = "every drawn case was declined by the variant (nothing checked)";
  } else if (res.assertions_passed == 0 || res.cases_checked == 0 || (res.cases_checked < 0 && !not_applicable_line.empty())) {
    // A property that cannot apply to this variant (no op of it, nothing it draws is claimed) or
    // that checked nothing here (no device, not enough host memory for P18): never a pass.
    res.verdict = PropertyVerdict::not_applicable;
    if (!not_applicable_line.empty()) res.message = one_line(not_applicable_line);
    else if (res.cases_checked == 0 && !not_applicable_reason.empty()) res.message = one_line(not_applicable_reason);
    if (res.message.empty()) res.message = "no assertion ran for this variant";
  } else if (res.cases_checked >= 0 && below_floor(res.cases_checked, res.cases_asked)) {
    // It ran, but on too few of its cases: what it says covers little of what the variant claims.
    char share[160];
    std::snprintf(share, sizeof share, "checked %lld of %lld cases asked (%.1f%%), below the floor of %lld%%",
                  static_cast<long long>(res.cases_checked), static_cast<long long>(res.cases_asked),
                  100.0 * res.checked_share(), static_cast<long long>(kCheckedFloorPercent));
    res.verdict = PropertyVerdict::below_floor;
    res.message = share;
    if (res.cases_rejected > 0)
      res.message += ", declined " + std::to_string(res.cases_rejected) +
                     (first_rejection.empty() ? std::string() : " (first reason: " + first_rejection + ")");
    if (res.cases_not_applicable > 0)
      res.message += ", not applicable " + std::to_string(res.cases_not_applicable) +
                     (not_applicable_reason.empty() ? std::string() : " (" + not_applicable_reason + ")");
    res.message = one_line(res.message);
  } else {
    res.verdict = PropertyVerdict::pass;
    res.message.clear();
  }
}

PropertyResult run_property_test(const PropertyExecutable& exe, const std::string& test_name,
                                 const std::string& variant, std::int64_t cases, double timeout_seconds) {
  PropertyResult res;
  res.executable = exe.target;
  res.name = test_name;
  res.id = property_id(test_name);
  res.cases_requested = cases;
  if (!is_executable(exe.path)) {
    res.verdict = PropertyVerdict::missing;
    res.message = exe.path + " is not built";
    return res;
  }
  // The XML goes to a file of its own: whatever the test prints on stdout stays out of it.
  char tmpl[] = "/tmp/rmsnorm-cert-XXXXXX";
  const int fd = ::mkstemp(tmpl);
  if (fd < 0) {
    res.verdict = PropertyVerdict::missing;
    res.message = "cannot create a temporary file for the report";
    return res;
  }
  ::close(fd);
  const std::string report_path = tmpl;
  const auto start = std::chrono::steady_clock::now();
  // Children run side by side, each with an OpenMP team as wide as the machine: threads that wait
  // sleep rather than spin, so that they do not take the cores the other children work on (as
  // the GPU shards of ctest do). The caller's own OMP_WAIT_POLICY wins.
  std::vector<std::pair<std::string, std::string>> env = {{"RMSNORM_VARIANTS", variant},
                                                          {"RMSNORM_PROP_CASES", std::to_string(cases)}};
  if (std::getenv("OMP_WAIT_POLICY") == nullptr) env.emplace_back("OMP_WAIT_POLICY", "passive");
  const ChildResult child = run_child({exe.path, escape_test_name(test_name), "-r", "xml", "-o", report_path}, env, timeout_seconds);
  res.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::string xml;
  {
    std::ifstream in(report_path);
    std::stringstream ss;
    ss << in.rdbuf();
    xml = ss.str();
  }
  std::remove(report_path.c_str());

  bool complete = false;
  const auto root = parse_xml(xml, complete);
  const auto test_cases = root->descendants("TestCase");
  std::vector<std::string> texts;
  bool reported_success = false, reported = false;
  for (const XmlElement* tc : test_cases) {
    res.tags = tc->attribute_or("tags", "");
    for (auto& t : failure_texts(*tc)) texts.push_back(std::move(t));
    for (const XmlElement* r : tc->children_named("OverallResult")) {
      reported = true;
      reported_success = r->attribute_or("success", "false") == "true";
    }
  }
  // The run's totals are the last OverallResults directly under <Catch> (v2 also has one per
  // <Group>, v3 one per run): take the last one in the document.
  const auto totals = root->descendants("OverallResults");
  if (!totals.empty()) {
    const XmlElement* t = totals.back();
    res.assertions_passed = std::atoll(t->attribute_or("successes", "0").c_str());
    res.assertions_failed = std::atoll(t->attribute_or("failures", "0").c_str());
  }
  texts.push_back(child.out);
  texts.push_back(child.err);
  // The report line may sit in the child's stdout and again in the XML's <StdOut>/<Info>.
  ReportCounts report = find_report(child.out);
  for (std::size_t i = 0; !report.found && i < texts.size(); ++i) report = find_report(texts[i]);
  if (report.found) {
    res.cases_asked = report.asked;
    res.cases_checked = report.checked;
    res.cases_rejected = report.rejected;
    res.cases_not_applicable = report.not_applicable;
  }
  std::string not_applicable_line;
  for (std::size_t i = 0; not_applicable_line.empty() && i < texts.size(); ++i) not_applicable_line = find_not_applicable_line(texts[i]);
  res.counterexample = find_counterexample(texts);
  res.failed_after = find_failed_after(texts);
  // The suite stops counting at the first failure: it came right after the checked ones.
  if (res.failed_after < 0 && res.cases_checked >= 0 && !res.counterexample.empty()) res.failed_after = res.cases_checked + 1;
  // The suite's own reason ("FAILED: ...") beats Catch2's expression text.
  for (const std::string& t : texts) {
    const std::size_t at = t.find("FAILED: ");
    if (at == std::string::npos) continue;
    std::string reason = t.substr(at + 8);
    const std::size_t nl = reason.find('\n');
    if (nl != std::string::npos) reason.erase(nl);
    res.message = one_line(reason);
    break;
  }
  if (res.message.empty())
    for (const std::string& t : texts)
      if (!t.empty()) {
        res.message = one_line(t);
        break;
      }

  if (!child.started) {
    res.verdict = PropertyVerdict::missing;
    res.message = child.describe();
  } else if (child.timed_out) {
    res.verdict = PropertyVerdict::timed_out;
    res.message = "no verdict within " + std::to_string(static_cast<int>(timeout_seconds)) + " s";
  } else if (child.signal != 0 || (!complete && !reported)) {
    res.verdict = PropertyVerdict::crashed;
    if (res.message.empty() || child.signal != 0) res.message = child.describe() + (res.message.empty() ? "" : ": " + res.message);
    // The suite names each case before a plugin kernel runs it.
    const std::string marker = harness::kCaseMarker;
    const std::size_t at = child.err.rfind(marker);
    if (at != std::string::npos) {
      std::string line = child.err.substr(at + marker.size());
      line = line.substr(0, line.find('\n'));
      res.counterexample = line;
      res.message = "crashed on case " + line + " (" + child.describe() + ")";
    }
  } else if (test_cases.empty()) {
    res.verdict = PropertyVerdict::missing;
    res.message = "the executable ran no test named '" + test_name + "' (" + child.describe() + ")";
  } else if (!reported_success || res.assertions_failed > 0 || (child.exit_code != 0 && child.exit_code != 77)) {
    res.verdict = PropertyVerdict::fail;
  } else {
    classify_counted(res, not_applicable_line, report.first_rejection, report.not_applicable_reason);
  }
  // A plugin's cases are announced before they run (for a crash): on a verdict without a failure,
  // the last one announced is no counterexample.
  if (res.verdict == PropertyVerdict::pass || res.verdict == PropertyVerdict::not_applicable ||
      res.verdict == PropertyVerdict::not_exercised || res.verdict == PropertyVerdict::below_floor)
    res.counterexample.clear();
  return res;
}

}  // namespace cert
