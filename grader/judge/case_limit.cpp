#include "judge/case_limit.h"

#include <algorithm>
#include <utility>

#include "wire/wire.h"

namespace grader {

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
    // Sending the results and ending (not a marker's first bytes, split from the rest by a read).
    if (progress.rest_at < bytes.size() && !progress.marker_cut) {
      return StepLimit{progress.markers + 1, end_seconds};
    }
    if (!progress.last_started) return StepLimit{progress.markers, load_seconds};
    if (*progress.last_started >= case_seconds.size()) return std::nullopt;  // not a case it was given
    return StepLimit{progress.markers, case_seconds[*progress.last_started]};
  };
}

}  // namespace grader
