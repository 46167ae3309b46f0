#include "judge/verdict.h"

#include <fmt/format.h>

#include <algorithm>
#include <set>

#include "wire/wire.h"

namespace grader {
namespace {

// The evidence beside a replaced result channel: the runner's last word and
// what the compiled code was seen to use.
std::vector<std::string> channel_evidence(const RunEnd& end) {
  std::vector<std::string> evidence = {wire::kChannelReplaced};
  evidence.insert(evidence.end(), end.forbidden_symbols.begin(), end.forbidden_symbols.end());
  return evidence;
}

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

std::optional<StageVerdict> verdict_of_compile(const CompileResult& compiled, bool no_builtins) {
  if (!compiled.ok) {
    // grader/prelude.h poisons the names of inline built-ins: naming one (to
    // call it, or to rename it with a macro) is using it.
    if (no_builtins && compiled.diagnostics.find("poisoned identifier") != std::string::npos) {
      return StageVerdict{Verdict::forbidden,
                          "Your code names a built-in that does the exercise for you (the compiler calls it a "
                          "poisoned identifier, above); build it from basic operations (matmul, softmax, "
                          "masked_fill, ...).",
                          "your code names a LibTorch built-in that does the exercise for you",
                          {first_line(compiled.diagnostics)}};
    }
    return StageVerdict{Verdict::compile_error, "Your code does not compile: the compiler's messages say where and why.",
                        "", {}};
  }
  // Code that defines or calls the grader's own functions (grader/judge/symbol_rules.cpp's
  // judge rules) is never run: loaded with the driver, it could steer what
  // the runner records.
  if (!compiled.refuses_run.empty()) {
    return StageVerdict{Verdict::forbidden, "Forbidden, not run: " + compiled.refuses_run + ".", compiled.refuses_run,
                        compiled.forbidden_symbols};
  }
  return std::nullopt;
}

std::optional<StageVerdict> verdict_of_run_end(const RunEnd& end, const StepLimits& limits) {
  auto number = [](double value) { return fmt::format("{:g}", value); };
  const std::string look = ": look for an endless loop, a wait, or far too much work.";
  if (end.memory_exceeded) {
    return StageVerdict{Verdict::memory_limit,
                      "Your code used more than the " + number(limits.memory_mb) +
                          " MB memory limit and was stopped: look for tensors kept alive in a loop or far larger than "
                          "the inputs.",
                      "", {}};
  }
  if (end.output_exceeded) {
    return StageVerdict{Verdict::output_limit,
                      "Your code printed more than the " + number(limits.output_kb) +
                          " KB output limit and was stopped: remove prints inside loops.",
                      "", {}};
  }
  if (end.timed_out) {
    if (end.case_limit_seconds && !end.cpu_exceeded) {
      return StageVerdict{Verdict::timeout,
                        "Your code was stopped after " + number(*end.case_limit_seconds) + " s" + end.where +
                            end.case_basis + look,
                        "", {}};
    }
    const auto what =
        end.cpu_exceeded ? number(limits.cpu_seconds) + " s of CPU time" : number(limits.seconds) + " s";
    return StageVerdict{Verdict::timeout, "Your code was stopped after " + what + end.where + look, "", {}};
  }
  if (end.channel_replaced) {
    return StageVerdict{Verdict::forbidden,
                      "Your code replaced the grader's result channel (a file descriptor of the process), so nothing "
                      "it computed can be trusted; attention code never touches descriptors.",
                      "your code replaced the grader's result channel (a file descriptor)", channel_evidence(end)};
  }
  if (end.forbidden_call) {
    return StageVerdict{Verdict::forbidden,
                      "Your code made a system call the sandbox forbids (starting programs or processes, signalling "
                      "other processes, network, debugging other processes, namespaces); the exercise needs none of "
                      "them.",
                      "", {}};
  }
  if (end.process_cap_hit) {
    return StageVerdict{Verdict::runtime_error,
                      "Your code tried to start more than " + std::to_string(limits.processes) +
                          " processes or threads; the exercise needs none.",
                      "", {}};
  }
  return std::nullopt;
}

std::optional<StageVerdict> verdict_of_results(const RunResults& results) {
  if (results.decode_error) {
    if (!results.exited_cleanly) {
      return StageVerdict{Verdict::runtime_error, "Your code crashed before the checks finished (" +
                                                      results.end_described + "); see its output above."};
    }
    return StageVerdict{Verdict::runtime_error,
                        "The program ended without delivering valid results (" + *results.decode_error +
                            "): did your code exit early or write to the grader's channel?"};
  }
  if (results.load_error) {
    StageVerdict loaded{Verdict::compile_error,
                        "Your code compiled but could not be loaded: is a function declared but never defined?"};
    loaded.compiler_output = first_line(*results.load_error) + "\n";
    return loaded;
  }
  if (!results.exited_cleanly) {
    return StageVerdict{Verdict::runtime_error, "Your program did not end normally (" + results.end_described +
                                                    ") after the checks ran; every run must end cleanly."};
  }
  if (results.responses != results.requests) {
    return StageVerdict{Verdict::runtime_error, "The program delivered " + std::to_string(results.responses) +
                                                    " results for " + std::to_string(results.requests) + " cases."};
  }
  if (!results.in_order) {
    return StageVerdict{Verdict::runtime_error, "The results came back out of order or tampered with."};
  }
  return std::nullopt;
}

ChecksDecision verdict_of_judged(const std::vector<CheckResult>& checks,
                                 const std::vector<FocusPointResult>& focus_points,
                                 const std::vector<std::string>& case_errors, const std::string& no_gpu) {
  // A built-in that does the exercise is not a wrong answer but a forbidden one.
  for (const auto& check : checks) {
    if (check.id == kNoBuiltinsCheck && check.status == CheckStatus::failed) {
      return {Verdict::forbidden, "Forbidden: " + check.message};
    }
  }
  const auto tally = verdict_of_checks(checks, focus_points);
  if (tally.verdict == Verdict::not_assessed) {
    return {Verdict::not_assessed,
            fmt::format("Not assessed here: {} check(s) need a GPU to run your code ({}); nothing was found "
                        "wrong, and nothing was shown to work. Grade it on a machine with a GPU (docs/gpu.md).",
                        tally.gpu_skipped, no_gpu)};
  }
  if (tally.verdict == Verdict::passed && tally.gpu_skipped == 0) return {Verdict::passed, "Every check passed.", true};
  if (tally.verdict == Verdict::passed) {
    return {Verdict::passed, "Every check that runs without a GPU passed; " + std::to_string(tally.gpu_skipped) +
                                 " GPU check(s) not run here and left out of the score."};
  }
  // An allocation refused (by the kernel or LibTorch's allocator) is running out of memory.
  for (const auto& error : case_errors) {
    if (error.find("can't allocate memory") != std::string::npos || error == "std::bad_alloc") {
      return {Verdict::memory_limit, "Your code could not allocate the memory it asked for (" + first_line(error) +
                                         "): look for tensors far larger than the inputs."};
    }
  }
  // One error everywhere (the untouched starter, say) is the thing to say.
  const std::set<std::string> errors(case_errors.begin(), case_errors.end());
  if (errors.size() == 1 && !errors.begin()->empty()) {
    return {Verdict::failed, "Every case stopped with the same error from your code: " + first_line(*errors.begin()),
            false, true};
  }
  const size_t missed = std::count_if(focus_points.begin(), focus_points.end(),
                                      [](const FocusPointResult& focus) { return focus.status == FocusStatus::missed; });
  const auto first_skip = std::find_if(checks.begin(), checks.end(), [](const CheckResult& c) {
    return c.status == CheckStatus::skipped && !c.needs_gpu;
  });
  const bool none_failed =
      std::none_of(checks.begin(), checks.end(), [](const CheckResult& c) { return c.status == CheckStatus::failed; });
  if (missed > 0) {
    return {Verdict::failed,
            std::to_string(missed) + " focus point(s) missed; read the explanations below, fix, and grade again."};
  }
  if (none_failed && first_skip != checks.end()) {
    // Nothing failed, but too little ran to pass (a CUDA kernel without a
    // GPU): not a pass, and not the learner's mistake either.
    return {Verdict::failed, fmt::format("Not assessed: {} check(s) could not run here ({}); nothing was found wrong "
                                         "with your code, and nothing was shown to work.",
                                         tally.unrun, first_skip->message)};
  }
  if (!none_failed) {
    return {Verdict::failed,
            "Some checks failed for a cause the grader could not tie to one focus point (below, with the smallest "
            "configuration that fails); no focus point is reported missed."};
  }
  return {Verdict::failed, "No focus point could be assessed; read the reasons below."};
}

}  // namespace grader
