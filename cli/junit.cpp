#include "junit.h"

#include <cstdio>
#include <fstream>

namespace cert {

namespace {

// Text and attribute values: the five reserved characters escaped; bytes XML 1.0 cannot hold
// (control characters other than tab, newline and carriage return) become '?'.
std::string escape(const std::string& s) {
  std::string out;
  out.reserve(s.size());
  for (const char ch : s) {
    const auto u = static_cast<unsigned char>(ch);
    switch (ch) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&apos;"; break;
      default: out += (u < 0x20 && ch != '\t' && ch != '\n' && ch != '\r') ? '?' : ch;
    }
  }
  return out;
}

std::string seconds(double s) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3f", s < 0 ? 0.0 : s);
  return buf;
}

}  // namespace

std::string junit_xml(const std::vector<JUnitSuite>& suites) {
  using R = JUnitCase::Result;
  std::string body;
  int all = 0, all_failures = 0, all_errors = 0, all_skipped = 0;
  double all_time = 0;
  for (const JUnitSuite& suite : suites) {
    int failures = 0, errors = 0, skipped = 0;
    double time = 0;
    std::string cases;
    for (const JUnitCase& c : suite.cases) {
      time += c.seconds;
      cases += "    <testcase classname=\"" + escape(c.classname) + "\" name=\"" + escape(c.name) + "\" time=\"" + seconds(c.seconds) + "\"";
      if (c.result == R::pass) {
        cases += "/>\n";
        continue;
      }
      const char* tag = c.result == R::fail ? "failure" : c.result == R::error ? "error" : "skipped";
      failures += c.result == R::fail;
      errors += c.result == R::error;
      skipped += c.result == R::skipped;
      cases += ">\n      <" + std::string(tag) + " message=\"" + escape(c.message) + "\"";
      cases += c.detail.empty() ? "/>\n" : ">" + escape(c.detail) + "</" + tag + ">\n";
      cases += "    </testcase>\n";
    }
    body += "  <testsuite name=\"" + escape(suite.name) + "\" tests=\"" + std::to_string(suite.cases.size()) + "\" failures=\"" +
            std::to_string(failures) + "\" errors=\"" + std::to_string(errors) + "\" skipped=\"" + std::to_string(skipped) +
            "\" time=\"" + seconds(time) + "\">\n" + cases + "  </testsuite>\n";
    all += static_cast<int>(suite.cases.size());
    all_failures += failures;
    all_errors += errors;
    all_skipped += skipped;
    all_time += time;
  }
  return "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites tests=\"" + std::to_string(all) + "\" failures=\"" +
         std::to_string(all_failures) + "\" errors=\"" + std::to_string(all_errors) + "\" skipped=\"" + std::to_string(all_skipped) +
         "\" time=\"" + seconds(all_time) + "\">\n" + body + "</testsuites>\n";
}

bool write_junit(const std::string& path, const std::vector<JUnitSuite>& suites, std::string& error) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) {
    error = "cannot write " + path;
    return false;
  }
  out << junit_xml(suites);
  out.close();
  if (!out) {
    error = "cannot write " + path;
    return false;
  }
  return true;
}

}  // namespace cert
