#include "case_limit.h"

#include <algorithm>
#include <string_view>
#include <utility>

#include "wire.h"

namespace grader {
namespace {

// Whether bytes from `at` on are the start of a case marker, its line not yet whole.
bool marker_begun(const std::string& bytes, size_t at) {
  const auto rest = std::string_view(bytes).substr(at);
  const std::string_view marker = wire::kCaseStarted;
  if (rest.size() <= marker.size()) return marker.substr(0, rest.size()) == rest;
  return rest.substr(0, marker.size()) == marker && rest.size() - marker.size() <= 9 &&
         rest.find_first_not_of("0123456789", marker.size()) == std::string_view::npos;
}

}  // namespace

CaseLimitRule case_limit_rule(const std::string& device) {
  CaseLimitRule rule;
  if (device != "cpu") rule.floor_seconds = 10;
  return rule;
}

double case_limit_seconds(const CaseLimitRule& rule, double reference_seconds, double whole_seconds) {
  const double scaled = reference_seconds > 0 ? rule.factor * reference_seconds : 0;
  return std::min(whole_seconds, std::max(rule.floor_seconds, scaled));
}

std::function<std::optional<StepLimit>(const std::string&)> case_step_limit(std::vector<double> case_seconds,
                                                                              double load_seconds,
                                                                              double end_seconds) {
  return [case_seconds = std::move(case_seconds), load_seconds,
          end_seconds](const std::string& bytes) -> std::optional<StepLimit> {
    const auto progress = wire::runner_progress(bytes);
    if (!progress.ready) return std::nullopt;
    // Sending the results and ending. (Not a
    // marker's first bytes, which a read may split from the rest.)
    if (progress.rest_at < bytes.size() && !marker_begun(bytes, progress.rest_at)) {
      return StepLimit{progress.markers + 1, end_seconds};
    }
    if (!progress.last_started) return StepLimit{progress.markers, load_seconds};
    if (*progress.last_started >= case_seconds.size()) return std::nullopt;  // not a case it was given
    return StepLimit{progress.markers, case_seconds[*progress.last_started]};
  };
}

}  // namespace grader
