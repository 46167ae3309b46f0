#include <algorithm>
#include <cmath>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "report/formats.h"
#include "report/platforms/platforms.h"

namespace grader::platforms {

std::string exercism(const GradeReport& report) {
  Json json;
  json["version"] = 3;
  if (nothing_ran(report)) {
    json["status"] = "error";
    json["message"] = stopped_output(report);
    json["tests"] = Json::array();
    return json_text(json);
  }
  // Not assessed here (a CUDA exercise without a GPU): the tests could not
  // run, which is Exercism's error, with the reason.
  if (report.verdict == Verdict::not_assessed) {
    json["status"] = "error";
    json["message"] = report.summary;
    json["tests"] = Json::array();
    return json_text(json);
  }
  // The interface's top-level message is for an error only; a failure says
  // its reasons in the tests' messages.
  json["status"] = report.verdict == Verdict::passed ? "pass" : "fail";
  json["tests"] = Json::array();
  bool first = true;
  for (const auto& check : report.checks) {
    // Exercism's statuses are pass, fail and error, and a pass means every
    // test passed: a check outside the score (informational, or needing a GPU
    // the grade did not have) is left out rather than shown as an error.
    if (!report.scored(check)) continue;
    Json test;
    test["name"] = test_name(check);
    test["status"] = check.status == CheckStatus::passed   ? "pass"
                     : check.status == CheckStatus::failed ? "fail"
                                                           : "error";
    if (test["status"] != "pass") test["message"] = details(check);  // the interface: none on a pass
    // Every check judges one run of the code: its output goes with the first.
    if (first && !report.program_stdout.empty()) {
      test["output"] = cut_to(printable(report.program_stdout), kExercismOutputLimit);
    }
    first = false;
    // What reproduces it: the same inputs, and the check to read.
    test["test_code"] = replay_command(report) + "   # then read check " + check.id + " [" + check.focus_point + "]";
    json["tests"].push_back(test);
  }
  return json_text(json);
}

}  // namespace grader::platforms
