// Each case's own wall-clock limit. A hang is stopped seconds after its case
// began, not at the end of the whole run's limit, and the report names that
// case: the limit is a multiple of the reference's time on the same case,
// with a floor that covers the runner's tracing and a loaded machine, and
// never more than the whole run's limit. Loading the learner's library (its
// static initialisers) gets the floor; sending the results and ending, 5 s.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "judge/process.h"

namespace grader {

struct CaseLimitRule {
  double floor_seconds = 2;  // what any case may take, and loading the library
  double factor = 50;        // times the reference's time, where that is longer
  // Sending the results and ending: a forked runner's exit runs LibTorch's
  // static destructors and reaches the grader through its zygote (0.1 to
  // 0.35 s measured): room for a crowded machine.
  double end_seconds = 5;
};

// The rule where cases run on `device` ("cpu", "cuda", ...): on a GPU the
// floor is larger (a first kernel's load and the device's own queue).
CaseLimitRule case_limit_rule(const std::string& device);

// The limit of a case the reference takes `reference_seconds` on (negative:
// unknown, the floor), within a run limited to `whole_seconds`.
double case_limit_seconds(const CaseLimitRule& rule, double reference_seconds, double whole_seconds);

// run_child's step limit (ChildSpec::step_limit) for a runner given cases
// with these limits: the library's load, then each case, each from the marker
// the runner writes as it begins (wire.h), then the results' sending and the
// end (`end_seconds`).
std::function<std::optional<StepLimit>(const std::string&)> case_step_limit(std::vector<double> case_seconds,
                                                                              double load_seconds,
                                                                              double end_seconds);

}  // namespace grader
