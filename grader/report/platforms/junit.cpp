#include <algorithm>
#include <cmath>
#include <fmt/format.h>
#include <tinyxml2.h>

#include "report/formats.h"
#include "report/platforms/platforms.h"

namespace grader::platforms {
namespace {

// Seconds as JUnit writes them.
std::string seconds(double value) { return fmt::format("{:.3f}", value); }

}  // namespace

std::string junit(const GradeReport& report) {
  tinyxml2::XMLDocument doc;
  doc.InsertEndChild(doc.NewDeclaration());
  auto* suites = doc.NewElement("testsuites");
  doc.InsertEndChild(suites);
  auto* suite = doc.NewElement("testsuite");
  suites->InsertEndChild(suite);
  size_t failures = 0, errors = 0, skipped = 0, tests = 0;
  auto* properties = doc.NewElement("properties");
  suite->InsertEndChild(properties);
  auto property = [&](const std::string& name, const std::string& value) {
    auto* item = doc.NewElement("property");
    item->SetAttribute("name", name.c_str());
    item->SetAttribute("value", printable(value).c_str());
    properties->InsertEndChild(item);
  };
  property("verdict", verdict_name(report.verdict));
  property("score", fmt::format("{:g}", report.score()));
  property("max_score", fmt::format("{:g}", report.max_score));
  property("seed", std::to_string(report.seed));
  property("submission", report.submission);
  // One test case "grade" holding an error: the verdict and its summary.
  auto grade_error = [&](const std::optional<std::string>& text) {
    auto* testcase = doc.NewElement("testcase");
    testcase->SetAttribute("name", "grade");
    testcase->SetAttribute("classname", report.exercise.c_str());
    testcase->SetAttribute("time", seconds(report.total_seconds).c_str());
    auto* error = doc.NewElement("error");
    error->SetAttribute("type", verdict_name(report.verdict).c_str());
    error->SetAttribute("message", printable(first_line(report.summary)).c_str());
    if (text) error->SetText(printable(*text).c_str());
    testcase->InsertEndChild(error);
    suite->InsertEndChild(testcase);
    ++tests;
    ++errors;
  };
  if (nothing_ran(report)) grade_error(stopped_output(report));
  for (const auto& check : report.checks) {
    auto* testcase = doc.NewElement("testcase");
    testcase->SetAttribute("name", check.id.c_str());  // check ids are unique in exercise.yaml
    testcase->SetAttribute("classname", check.focus_point.c_str());
    // The cases run once for every check; a check's time is the grader's judging of it.
    testcase->SetAttribute("time", seconds(check.seconds).c_str());
    ++tests;
    if (check.informational && check.status != CheckStatus::skipped) {
      // A measurement beside the grade: its figure, never a failure.
      auto* out = doc.NewElement("system-out");
      out->SetText(printable(details(check)).c_str());
      testcase->InsertEndChild(out);
    } else if (check.status == CheckStatus::skipped) {
      auto* skip = doc.NewElement("skipped");
      skip->SetAttribute("message", printable(check.message).c_str());
      testcase->InsertEndChild(skip);
      ++skipped;
    } else if (!report.credits(check) && report.verdict != Verdict::not_assessed) {
      // A passed check of forbidden code does not pass: the verdict overrides it.
      const bool overridden = check.status == CheckStatus::passed;
      auto* failure = doc.NewElement("failure");
      failure->SetAttribute("type", overridden ? verdict_name(report.verdict).c_str()
                                               : (check.mistake.empty() ? "mismatch" : check.mistake.c_str()));
      failure->SetAttribute("message", printable(first_line(overridden ? report.summary : check.message)).c_str());
      failure->SetText(printable(overridden ? report.summary : details(check)).c_str());
      testcase->InsertEndChild(failure);
      ++failures;
    }
    suite->InsertEndChild(testcase);
  }
  // Not passed, and no check failed (every one skipped: no GPU, no nvcc): one
  // error says why, so a CI never counts the grade as green.
  // A grade not assessed here (a CUDA exercise without a GPU) stays skipped: neither red nor green.
  if (report.verdict != Verdict::passed && report.verdict != Verdict::not_assessed && failures == 0 && errors == 0)
    grade_error(std::nullopt);
  if (!report.program_stdout.empty()) {
    auto* out = doc.NewElement("system-out");
    out->SetText(printable(report.program_stdout).c_str());
    suite->InsertEndChild(out);
  }
  if (!report.program_stderr.empty()) {
    auto* err = doc.NewElement("system-err");
    err->SetText(printable(report.program_stderr).c_str());
    suite->InsertEndChild(err);
  }
  for (auto* element : {suites, suite}) {
    element->SetAttribute("name", element == suite ? report.exercise.c_str() : "attention-grader");
    element->SetAttribute("tests", static_cast<int64_t>(tests));
    element->SetAttribute("failures", static_cast<int64_t>(failures));
    element->SetAttribute("errors", static_cast<int64_t>(errors));
    element->SetAttribute("skipped", static_cast<int64_t>(skipped));
    element->SetAttribute("time", seconds(report.total_seconds).c_str());
  }
  tinyxml2::XMLPrinter printer;
  doc.Print(&printer);
  return printer.CStr();
}

}  // namespace grader::platforms
