#include <algorithm>
#include <cmath>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "report/formats.h"
#include "report/platforms/platforms.h"

namespace grader::platforms {

std::string prairielearn(const GradeReport& report) {
  Json json;
  // A submission that does not compile is not gradable (it costs no attempt);
  // neither is one the grader itself failed on.
  json["gradable"] = report.verdict != Verdict::compile_error && report.verdict != Verdict::grader_error &&
                     report.verdict != Verdict::not_assessed;
  // PrairieLearn shows why a submission could not be graded from format_errors.
  if (!json["gradable"].get<bool>()) json["format_errors"] = Json::array({report.summary});
  json["score"] = ratio(report);
  json["message"] = report.summary;
  json["output"] = nothing_ran(report) ? stopped_output(report) : report.program_stdout;
  // The attention figures, as long as they leave room in PrairieLearn's 1 MB.
  size_t image_bytes = 0;
  for (const auto& image : figure_images(report)) {
    auto url = "data:image/svg+xml;base64," + base64(image.svg);
    if (image_bytes + url.size() > kPrairieLearnImageBytes) break;
    image_bytes += url.size();
    json["images"].push_back({{"label", image.label}, {"url", url}});
  }
  json["tests"] = Json::array();
  for (const auto& check : report.checks) {
    const bool passed = report.credits(check) && report.scored(check);
    Json test;
    test["name"] = test_name(check);
    test["description"] = "focus point: " + check.focus_point;
    test["points"] = passed ? check.weight : 0.0;
    test["max_points"] = report.scored(check) ? check.weight : 0.0;  // outside the score: a note of 0 points
    test["message"] = check.status == CheckStatus::skipped ? "not assessed: " + check.message : check.message;
    test["output"] = details(check);
    json["tests"].push_back(test);
  }
  return json_text(json);
}

}  // namespace grader::platforms
