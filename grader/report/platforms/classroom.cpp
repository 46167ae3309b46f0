#include <algorithm>
#include <cmath>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "report/formats.h"
#include "report/platforms/platforms.h"

namespace grader::platforms {

// GitHub Classroom's autograding result, as its grading reporter reads a
// runner's (base64 of it in <RUNNER>_RESULTS): status, max_score, and each
// test with its score; the reporter sends the points to Classroom.
std::string classroom(const GradeReport& report) {
  Json json;
  json["version"] = 1;
  json["status"] = nothing_ran(report) || report.verdict == Verdict::not_assessed ? "error"
                   : report.verdict == Verdict::passed                          ? "pass"
                                                                                 : "fail";
  json["max_score"] = report.max_score;
  json["tests"] = Json::array();
  if (nothing_ran(report)) {
    json["tests"].push_back({{"name", "grade"},
                             {"status", "error"},
                             {"score", 0},
                             {"message", cut_to(printable(stopped_output(report)), kMaxShownOutput)}});
  }
  for (const auto& check : report.checks) {
    if (!report.scored(check)) continue;
    const bool passed = report.credits(check);
    Json test;
    test["name"] = test_name(check);
    test["status"] = passed ? "pass" : check.status == CheckStatus::skipped ? "error" : "fail";
    test["score"] = passed ? check.weight : 0.0;
    if (!passed) test["message"] = details(check);
    test["test_code"] = replay_command(report);
    json["tests"].push_back(test);
  }
  return json_text(json);
}

}  // namespace grader::platforms
