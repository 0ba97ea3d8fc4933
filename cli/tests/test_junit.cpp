// The JUnit writer, read back with the XML reader the tool uses for Catch2's reports.
#include "harness/catch.h"

#include "junit.h"
#include "xml_tree.h"

TEST_CASE("JUnit XML counts each result and escapes what XML reserves", "[cli]") {
  using R = cert::JUnitCase::Result;
  cert::JUnitSuite a{"rmsnorm-cert certify host.reference", {}};
  a.cases.push_back({"host.reference", "P1 forward <outputs> & \"bounds\"", 1.5, R::pass, "", ""});
  a.cases.push_back({"host.reference", "P2", 0.25, R::fail, "below floor: 80 of 100", "repro line 'x'\n  second"});
  a.cases.push_back({"host.reference", "P13", 0, R::skipped, "not applicable", ""});
  a.cases.push_back({"host.reference", "suite", 0, R::error, std::string("bell \a here"), ""});
  cert::JUnitSuite b{"rmsnorm-cert mutants", {{"mutants", "mutant.host.reference.M1_padded_divisor", 2, R::pass, "killed by P1", ""}}};
  const std::string xml = cert::junit_xml({a, b});
  bool complete = false;
  const auto root = cert::parse_xml(xml, complete);
  REQUIRE(complete);
  const auto top = root->children_named("testsuites");
  REQUIRE(top.size() == 1);
  CHECK(top[0]->attribute_or("tests", "") == "5");
  CHECK(top[0]->attribute_or("failures", "") == "1");
  CHECK(top[0]->attribute_or("errors", "") == "1");
  CHECK(top[0]->attribute_or("skipped", "") == "1");
  const auto suites = top[0]->children_named("testsuite");
  REQUIRE(suites.size() == 2);
  CHECK(suites[0]->attribute_or("name", "") == "rmsnorm-cert certify host.reference");
  CHECK(suites[0]->attribute_or("tests", "") == "4");
  CHECK(suites[0]->attribute_or("time", "") == "1.750");
  const auto cases = suites[0]->children_named("testcase");
  REQUIRE(cases.size() == 4);
  CHECK(cases[0]->attribute_or("name", "") == "P1 forward <outputs> & \"bounds\"");
  CHECK(cases[0]->children.empty());
  const auto failure = cases[1]->children_named("failure");
  REQUIRE(failure.size() == 1);
  CHECK(failure[0]->attribute_or("message", "") == "below floor: 80 of 100");
  CHECK(failure[0]->text == "repro line 'x'\n  second");
  CHECK(cases[2]->children_named("skipped").size() == 1);
  const auto error = cases[3]->children_named("error");
  REQUIRE(error.size() == 1);
  CHECK(error[0]->attribute_or("message", "") == "bell ? here");  // no control characters in XML 1.0
  CHECK(xml.find('\a') == std::string::npos);
}
