#include <algorithm>
#include <cmath>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "report/formats.h"
#include "report/platforms/platforms.h"

namespace grader::platforms {

std::string gradescope(const GradeReport& report) {
  Json json;
  // Gradescope's results have no top-level maximum: the assignment's points
  // are set in Gradescope, and each test states its own.
  json["score"] = report.score();
  json["execution_time"] = static_cast<int64_t>(std::ceil(report.total_seconds));
  json["output"] = nothing_ran(report) ? stopped_output(report) : report.summary + outside_score_note(report);
  json["visibility"] = report.visibility;
  json["stdout_visibility"] = "hidden";
  json["tests"] = Json::array();
  for (const auto& check : report.checks) {
    if (!report.scored(check)) continue;  // in the output's note: never a failed test
    const bool passed = report.credits(check);
    Json test;
    test["name"] = test_name(check);
    test["score"] = passed ? check.weight : 0.0;
    test["max_score"] = check.weight;
    test["status"] = passed ? "passed" : "failed";
    test["output"] = check.status == CheckStatus::skipped ? "not assessed: " + details(check) : details(check);
    std::vector<std::string> tags = {check.focus_point};
    for (const auto& more : check.also_against) tags.push_back(more);
    test["tags"] = tags;
    test["visibility"] = check.visibility.empty() ? report.visibility : check.visibility;
    json["tests"].push_back(test);
  }
  return json_text(json);
}

}  // namespace grader::platforms
