#include "verdict.h"

#include <algorithm>

namespace grader {
namespace {

// The exercise.yaml check a result is of, if any.
const CheckSpec* spec_of(const Exercise& exercise, const CheckResult& check) {
  const auto spec = std::find_if(exercise.checks.begin(), exercise.checks.end(),
                                 [&](const CheckSpec& candidate) { return candidate.id == check.id; });
  return spec == exercise.checks.end() ? nullptr : &*spec;
}

// Whether only a machine with what `spec` needs can assess it: a GPU, or for
// a CUDA exercise's compile, the CUDA toolkit. Skipped off the GPU, such a
// check is "not assessed here", outside the score, never a failure.
bool needs_the_machine(const Exercise& exercise, const CheckSpec& spec) {
  return exercise.needs_gpu(spec) || (exercise.gpu_only() && spec.kind == "compiles");
}

}  // namespace

void mark_score_scope(std::vector<CheckResult>& checks, const Exercise& exercise, bool on_gpu) {
  for (auto& check : checks) {
    const auto* spec = spec_of(exercise, check);
    if (!spec) continue;
    check.informational = spec->informational;
    check.visibility = spec->visibility;
    // What ran to a result here (a forbidden symbol seen in the compiled
    // kernel) was assessed here, GPU or not.
    if (!on_gpu && needs_the_machine(exercise, *spec) && check.status == CheckStatus::skipped) check.needs_gpu = true;
  }
}

bool in_score(const CheckResult& check) { return !check.informational && !check.needs_gpu; }

double max_score_of(const std::vector<CheckResult>& checks, const Exercise& exercise, bool on_gpu) {
  double total = exercise.max_score(on_gpu);
  if (on_gpu) return total;
  for (const auto& check : checks) {
    const auto* spec = spec_of(exercise, check);
    if (spec && exercise.needs_gpu(*spec) && in_score(check)) total += spec->weight;
    // A CUDA compile that could not run here (no nvcc) is out of the maximum too.
    if (spec && !exercise.needs_gpu(*spec) && check.needs_gpu && !check.informational) total -= spec->weight;
  }
  return total;
}

ChecksVerdict verdict_of_checks(const std::vector<CheckResult>& checks,
                                const std::vector<FocusPointResult>& focus_points) {
  ChecksVerdict out;
  for (const auto& check : checks) {
    if (check.informational) continue;
    if (check.status == CheckStatus::failed) {
      ++out.failed;
    } else if (check.status == CheckStatus::skipped) {
      ++(check.needs_gpu ? out.gpu_skipped : out.unrun);
    }
  }
  const bool any_met = std::any_of(focus_points.begin(), focus_points.end(),
                                   [](const FocusPointResult& focus) { return focus.status == FocusStatus::met; });
  if (out.failed > 0 || out.unrun > 0) {
    out.verdict = Verdict::failed;
  } else if (!any_met) {
    // Not assessed only for want of a GPU; nothing shown for another cause
    // (every point partly assessed, say) is no pass and no neutral result.
    out.verdict = out.gpu_skipped > 0 ? Verdict::not_assessed : Verdict::failed;
  } else {
    out.verdict = Verdict::passed;
  }
  return out;
}

}  // namespace grader
