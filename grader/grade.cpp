#include "grade.h"

#include <chrono>
#include <cstdlib>
#include <random>
#include <set>

#include "checks/check.h"
#include "compile.h"
#include "errors.h"
#include "process.h"
#include "toolchain.h"
#include "wire.h"

namespace grader {
namespace fs = std::filesystem;
namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point start) { return std::chrono::duration<double>(Clock::now() - start).count(); }

// A private scratch folder for one grade, removed afterwards unless kept.
class Scratch {
 public:
  Scratch(const fs::path& parent, bool keep) : keep_(keep) {
    fs::create_directories(parent);
    std::string pattern = (parent / "grade-XXXXXX").string();
    if (!mkdtemp(pattern.data())) throw GraderFault("cannot create a scratch folder under " + parent.string());
    path_ = pattern;
  }
  ~Scratch() {
    std::error_code ignored;
    if (!keep_) fs::remove_all(path_, ignored);
  }
  const fs::path& path() const { return path_; }

 private:
  fs::path path_;
  bool keep_;
};

std::string first_line(const std::string& text) { return text.substr(0, text.find('\n')); }

}  // namespace

GradeReport grade(const GradeOptions& options) {
  auto start = Clock::now();
  auto exercise_dir = find_exercise_dir(options.project_root / "exercises", options.exercise);
  auto exercise = load_exercise(exercise_dir);
  if (options.run_seconds) exercise.run_seconds = *options.run_seconds;
  auto suite = make_suite(exercise);

  fs::path submission = options.submission.value_or(exercise.learner_file());
  if (!fs::is_regular_file(submission)) throw UsageError("submission file not found: " + submission.string());
  submission = fs::absolute(submission);
  auto toolchain = load_toolchain(options.build_dir / "toolchain.txt");

  GradeReport report;
  report.exercise = exercise.id;
  report.title = exercise.title;
  report.submission = submission.string();
  report.seed = options.seed.value_or(std::random_device{}() % 1000000000u);

  Scratch scratch(options.build_dir / "scratch", options.keep_scratch);
  auto finish = [&](Verdict verdict, std::string summary) {
    report.verdict = verdict;
    report.summary = std::move(summary);
    report.assess_focus_points(exercise.focus_points);
    report.total_seconds = seconds_since(start);
    return report;
  };

  // Compile.
  auto compiled = compile_submission(toolchain, exercise, submission, scratch.path(), options.project_root,
                                     options.use_cache ? options.build_dir / "cache" / exercise.id : fs::path());
  report.compile_seconds = compiled.seconds;
  report.compile_cached = compiled.cached;
  if (!compiled.ok) {
    report.compiler_output = compiled.diagnostics;
    return finish(Verdict::compile_error, "Your code does not compile; the compiler's messages are above.");
  }

  // Run every case in one child process; only its result channel counts.
  auto requests = suite->plan(report.seed);
  ChildSpec spec;
  spec.argv = {fs::absolute(toolchain.runner).string(), compiled.shared_object.string()};
  spec.working_dir = scratch.path().string();
  spec.request = wire::encode(requests);
  spec.result_channel = true;
  spec.limits.wall_seconds = exercise.run_seconds;
  spec.limits.cpu_seconds = exercise.run_seconds;
  auto run_start = Clock::now();
  auto outcome = run_child(spec);
  report.run_seconds = seconds_since(run_start);
  report.program_stdout = outcome.stdout_text + (outcome.stdout_truncated ? "\n[output cut off here]" : "");
  report.program_stderr = outcome.stderr_text + (outcome.stderr_truncated ? "\n[output cut off here]" : "");

  if (outcome.timed_out) {
    return finish(Verdict::timeout, "Your code was stopped after " +
                                        std::to_string(static_cast<int>(exercise.run_seconds)) +
                                        " s: look for an endless loop or far too much work.");
  }
  if (outcome.result.compare(0, wire::kRunnerReady.size(), wire::kRunnerReady) != 0) {
    // The runner never reached the learner's code: the grader's own failure.
    throw GraderFault("the runner did not start (" + outcome.describe_end() + "): " + first_line(outcome.stderr_text));
  }
  std::vector<wire::Record> responses;
  try {
    if (outcome.result_truncated) throw wire::WireError("results larger than allowed");
    responses = wire::decode(outcome.result.substr(wire::kRunnerReady.size()));
  } catch (const wire::WireError& error) {
    if (!outcome.exited_cleanly()) {
      return finish(Verdict::runtime_error, "Your code crashed before the checks finished (" + outcome.describe_end() +
                                                "); see its output above.");
    }
    return finish(Verdict::runtime_error, "The program ended without delivering valid results (" +
                                              std::string(error.what()) + "): did your code exit early or write to the grader's channel?");
  }
  if (responses.size() == 1 && responses.front().strings.count("load_error")) {
    report.compiler_output = first_line(responses.front().strings.at("load_error")) + "\n";
    return finish(Verdict::compile_error,
                  "Your code compiled but could not be loaded: is a function declared but "
                  "never defined?");
  }
  if (!outcome.exited_cleanly()) {
    return finish(Verdict::runtime_error, "Your program did not end normally (" + outcome.describe_end() +
                                              ") after the checks ran; every run must end cleanly.");
  }
  if (responses.size() != requests.size()) {
    return finish(Verdict::runtime_error, "The program delivered " + std::to_string(responses.size()) +
                                              " results for " + std::to_string(requests.size()) + " cases.");
  }

  JudgeInput input;
  input.forbidden_symbols = compiled.forbidden_symbols;
  input.seed = report.seed;
  for (size_t i = 0; i < requests.size(); ++i) {
    auto id = requests[i].string("case");
    if (responses[i].string_or("case", "") != id) {
      return finish(Verdict::runtime_error, "The results came back out of order or tampered with.");
    }
    input.cases[id] = CaseRun{requests[i], responses[i]};
  }
  report.checks = suite->judge(input);

  size_t failed = 0;
  for (const auto& check : report.checks) failed += check.status != CheckStatus::passed;
  // A skipped check blocks a pass too: what was not assessed was not shown to work.
  if (failed == 0) return finish(Verdict::passed, "Every check passed.");
  auto verdict = finish(Verdict::failed, "");
  size_t missed = 0;
  for (const auto& focus : verdict.focus_points) missed += focus.status == FocusStatus::missed;
  verdict.summary =
      missed > 0 ? std::to_string(missed) + " focus point(s) missed; read the explanations above, fix, and grade again."
                 : "Some checks could not be assessed; read their reasons above.";
  // One error everywhere (the untouched starter, say) is the thing to say.
  std::set<std::string> errors;
  for (const auto& [id, run] : input.cases) errors.insert(run.error());
  if (errors.size() == 1 && !errors.begin()->empty()) {
    verdict.summary = "Every case stopped with the same error from your code: " + first_line(*errors.begin());
  }
  return verdict;
}

}  // namespace grader
