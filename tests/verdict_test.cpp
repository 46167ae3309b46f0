// The rules that turn check results into a verdict and a score (verdict.h):
// a full answer earns full marks on any machine, checks that only a GPU can
// assess and informational ones are outside the score, and a grade where
// nothing could be shown is not assessed, not failed.
#include <gtest/gtest.h>

#include <fstream>
#include <optional>
#include <sstream>

#include "base/errors.h"
#include "exercise/exercise.h"
#include "project_root.h"
#include "judge/verdict.h"
#include "wire/wire.h"

namespace grader {
namespace {

using test_support::project_root;

struct Check {
  const char* focus;
  CheckStatus status;
  bool needs_gpu = false;
  bool informational = false;
};

std::vector<CheckResult> make(const std::vector<Check>& rows) {
  std::vector<CheckResult> out;
  for (size_t i = 0; i < rows.size(); ++i) {
    CheckResult result;
    result.id = "check_" + std::to_string(i);
    result.focus_point = rows[i].focus;
    result.status = rows[i].status;
    result.needs_gpu = rows[i].needs_gpu;
    result.informational = rows[i].informational;
    out.push_back(result);
  }
  return out;
}

std::vector<FocusPointResult> points_of(const std::vector<CheckResult>& checks) {
  GradeReport report;
  report.checks = checks;
  std::vector<FocusPoint> points;
  for (const auto& check : checks) {
    if (std::none_of(points.begin(), points.end(), [&](const FocusPoint& p) { return p.id == check.focus_point; }))
      points.push_back({check.focus_point, check.focus_point, "", {}});
  }
  report.assess_focus_points(points);
  return report.focus_points;
}

TEST(VerdictOfChecks, PassFailAndNotAssessed) {
  using S = CheckStatus;
  struct Row {
    const char* what;
    std::vector<Check> checks;
    Verdict want;
  };
  const std::vector<Row> rows = {
      {"every check passed", {{"p", S::passed}, {"q", S::passed}}, Verdict::passed},
      {"one failed", {{"p", S::passed}, {"q", S::failed}}, Verdict::failed},
      {"one skipped for another cause than a GPU", {{"p", S::passed}, {"q", S::skipped}}, Verdict::failed},
      {"a GPU check skipped on a grade without a GPU", {{"p", S::passed}, {"q", S::skipped, true}}, Verdict::passed},
      {"a GPU check skipped and another failed", {{"p", S::failed}, {"q", S::skipped, true}}, Verdict::failed},
      {"only a compile passed, every other check needs a GPU",
       {{"launch", S::passed}, {"launch", S::skipped, true}, {"bounds", S::skipped, true}},
       Verdict::not_assessed},
      {"every check needs a GPU", {{"p", S::skipped, true}, {"q", S::skipped, true}}, Verdict::not_assessed},
      {"nothing shown, and no GPU check skipped", {{"p", S::passed, false, true}}, Verdict::failed},
      {"an informational check failed", {{"p", S::passed}, {"p", S::failed, false, true}}, Verdict::passed},
      {"an informational check skipped", {{"p", S::passed}, {"q", S::skipped, false, true}}, Verdict::passed},
      {"a GPU-only check that failed even so (forbidden symbols seen without a GPU)",
       {{"p", S::passed}, {"q", S::failed, true}},
       Verdict::failed},
  };
  for (const auto& row : rows) {
    const auto checks = make(row.checks);
    EXPECT_EQ(verdict_name(verdict_of_checks(checks, points_of(checks)).verdict), verdict_name(row.want)) << row.what;
  }
}

// exercise_mhsa's exercise.yaml with `from` replaced by `to` (once).
Exercise mhsa_with(const std::string& from, const std::string& to) {
  const auto dir = project_root() / "exercises" / "exercise_mhsa";
  std::ifstream in(dir / "exercise.yaml");
  std::stringstream text;
  text << in.rdbuf();
  auto yaml = text.str();
  const auto at = yaml.find(from);
  EXPECT_NE(at, std::string::npos) << from;
  if (at != std::string::npos) yaml.replace(at, from.size(), to);
  return parse_exercise(yaml, dir);
}

const std::string kGpuCheck = "{id: gpu_execution, kind: gpu_execution,";

// A compile decides before anything runs, one rule per row.
TEST(VerdictOfCompile, OneRulePerRow) {
  auto compiled = [](bool ok, std::string diagnostics, std::string refuses) {
    CompileResult result;
    result.ok = ok;
    result.diagnostics = std::move(diagnostics);
    result.refuses_run = std::move(refuses);
    result.forbidden_symbols = {"grader_run_case"};
    return result;
  };
  const std::string poisoned = "x.cpp:3:10: error: attempt to use a poisoned identifier\n  f();";
  struct Row {
    const char* what;
    CompileResult compiled;
    bool no_builtins;
    std::optional<Verdict> verdict;
    const char* says;
    std::vector<std::string> evidence;  // where it forbids
  };
  const Row rows[] = {
      {"compiled", compiled(true, "", ""), true, std::nullopt, "", {}},
      {"an error", compiled(false, "x.cpp:1: error: expected ';'", ""), true, Verdict::compile_error,
       "does not compile", {}},
      {"a poisoned built-in", compiled(false, poisoned, ""), true, Verdict::forbidden, "poisoned identifier",
       {"x.cpp:3:10: error: attempt to use a poisoned identifier"}},
      {"a poisoned name where built-ins are allowed", compiled(false, poisoned, ""), false, Verdict::compile_error,
       "does not compile", {}},
      {"the grader's own functions", compiled(true, "", "it defines grader_run_case"), true, Verdict::forbidden,
       "Forbidden, not run: it defines grader_run_case.", {"grader_run_case"}},
  };
  for (const auto& row : rows) {
    SCOPED_TRACE(row.what);
    const auto got = verdict_of_compile(row.compiled, row.no_builtins);
    ASSERT_EQ(got.has_value(), row.verdict.has_value());
    if (!got) continue;
    EXPECT_EQ(got->verdict, *row.verdict);
    EXPECT_NE(got->summary.find(row.says), std::string::npos) << got->summary;
    EXPECT_EQ(got->evidence, row.evidence);
    EXPECT_EQ(got->forbids.empty(), row.evidence.empty());
  }
}

// The run's end decides before any result is read, one rule per row, in order.
TEST(VerdictOfRunEnd, OneRulePerRowFirstMatchWins) {
  const StepLimits limits{30, 20, 1024, 32, 512};
  auto ended = [](auto set) {
    RunEnd end;
    set(end);
    return end;
  };
  struct Row {
    const char* what;
    RunEnd end;
    std::optional<Verdict> verdict;
    const char* says;
    bool forbids;
  };
  const Row rows[] = {
      {"ran through", RunEnd{}, std::nullopt, "", false},
      {"memory", ended([](RunEnd& e) { e.memory_exceeded = true; }), Verdict::memory_limit, "1024 MB memory limit",
       false},
      {"output", ended([](RunEnd& e) { e.output_exceeded = true; }), Verdict::output_limit, "512 KB output limit",
       false},
      {"wall clock", ended([](RunEnd& e) { e.timed_out = true; e.where = " in case 2 of 9 (B=1)"; }), Verdict::timeout,
       "stopped after 30 s in case 2 of 9 (B=1): look for", false},
      {"CPU", ended([](RunEnd& e) { e.timed_out = e.cpu_exceeded = true; }), Verdict::timeout,
       "stopped after 20 s of CPU time", false},
      {"a case's own limit", ended([](RunEnd& e) {
         e.timed_out = true;
         e.case_limit_seconds = 2;
         e.where = " in case 1 of 9 (B=2)";
         e.case_basis = "; each case may take 2 s";
       }),
       Verdict::timeout, "stopped after 2 s in case 1 of 9 (B=2); each case may take 2 s: look for", false},
      {"CPU over a case's limit", ended([](RunEnd& e) { e.timed_out = e.cpu_exceeded = true; e.case_limit_seconds = 2; }),
       Verdict::timeout, "20 s of CPU time", false},
      {"channel replaced", ended([](RunEnd& e) { e.channel_replaced = true; }), Verdict::forbidden,
       "replaced the grader's result channel", true},
      {"forbidden call", ended([](RunEnd& e) { e.forbidden_call = true; }), Verdict::forbidden,
       "system call the sandbox forbids", false},
      {"process cap", ended([](RunEnd& e) { e.process_cap_hit = true; }), Verdict::runtime_error,
       "more than 32 processes or threads", false},
      // Precedence: what the counters measured before what the code did.
      {"memory over time", ended([](RunEnd& e) { e.memory_exceeded = e.timed_out = true; }), Verdict::memory_limit,
       "memory limit", false},
      {"time over a forbidden call", ended([](RunEnd& e) { e.timed_out = e.forbidden_call = true; }),
       Verdict::timeout, "stopped after 30 s", false},
      {"a forbidden call over the process cap", ended([](RunEnd& e) { e.forbidden_call = e.process_cap_hit = true; }),
       Verdict::forbidden, "forbids", false},
  };
  for (const auto& row : rows) {
    SCOPED_TRACE(row.what);
    auto end = row.end;
    end.forbidden_symbols = {"dup2"};
    const auto got = verdict_of_run_end(end, limits);
    ASSERT_EQ(got.has_value(), row.verdict.has_value());
    if (!got) continue;
    EXPECT_EQ(got->verdict, *row.verdict);
    EXPECT_NE(got->summary.find(row.says), std::string::npos) << got->summary;
    EXPECT_EQ(!got->forbids.empty(), row.forbids);
    if (row.forbids) {
      EXPECT_EQ(got->evidence, (std::vector<std::string>{wire::kChannelReplaced, "dup2"}));
    }
  }
}

// The results decide before any check reads them, one rule per row, in order.
TEST(VerdictOfResults, OneRulePerRowFirstMatchWins) {
  auto with = [](auto set) {
    RunResults results;
    results.requests = results.responses = 9;
    results.end_described = "killed by signal 11";
    set(results);
    return results;
  };
  struct Row {
    const char* what;
    RunResults results;
    std::optional<Verdict> verdict;
    const char* says;
    const char* compiler_output;
  };
  const Row rows[] = {
      {"all there", with([](RunResults&) {}), std::nullopt, "", ""},
      {"unreadable after a crash", with([](RunResults& r) { r.decode_error = "bad"; r.exited_cleanly = false; }),
       Verdict::runtime_error, "crashed before the checks finished (killed by signal 11)", ""},
      {"unreadable after a clean exit", with([](RunResults& r) { r.decode_error = "bad frame"; }),
       Verdict::runtime_error, "without delivering valid results (bad frame)", ""},
      {"not loadable", with([](RunResults& r) { r.load_error = "undefined symbol: f\nmore"; r.responses = 1; }),
       Verdict::compile_error, "could not be loaded", "undefined symbol: f\n"},
      {"an unclean end", with([](RunResults& r) { r.exited_cleanly = false; }), Verdict::runtime_error,
       "did not end normally (killed by signal 11)", ""},
      {"a result missing", with([](RunResults& r) { r.responses = 8; }), Verdict::runtime_error,
       "delivered 8 results for 9 cases", ""},
      {"out of order", with([](RunResults& r) { r.in_order = false; }), Verdict::runtime_error, "out of order", ""},
      // Precedence: unreadable results say nothing of loading; a crash before a count.
      {"unreadable over not loadable", with([](RunResults& r) { r.decode_error = "x"; r.load_error = "y"; }),
       Verdict::runtime_error, "without delivering valid results", ""},
      {"unclean over missing", with([](RunResults& r) { r.exited_cleanly = false; r.responses = 2; }),
       Verdict::runtime_error, "did not end normally", ""},
  };
  for (const auto& row : rows) {
    SCOPED_TRACE(row.what);
    const auto got = verdict_of_results(row.results);
    ASSERT_EQ(got.has_value(), row.verdict.has_value());
    if (!got) continue;
    EXPECT_EQ(got->verdict, *row.verdict);
    EXPECT_NE(got->summary.find(row.says), std::string::npos) << got->summary;
    EXPECT_EQ(got->compiler_output, row.compiler_output);
  }
}

// Once the checks ran: one rule per row, in order.
TEST(VerdictOfJudged, OneRulePerRowFirstMatchWins) {
  using S = CheckStatus;
  struct Row {
    const char* what;
    std::vector<Check> checks;
    std::vector<std::string> errors;
    Verdict verdict;
    const char* says;
    bool full_pass;
  };
  const Row rows[] = {
      {"all passed", {{"a", S::passed}, {"b", S::passed}}, {"", ""}, Verdict::passed, "Every check passed.", true},
      {"passed but for the GPU", {{"a", S::passed}, {"b", S::skipped, true}}, {""}, Verdict::passed,
       "1 GPU check(s) not run here and left out of the score.", false},
      {"nothing shown for want of a GPU", {{"a", S::skipped, true}}, {""}, Verdict::not_assessed,
       "1 check(s) need a GPU to run your code (no GPU here)", false},
      {"a focus point missed", {{"a", S::failed}, {"b", S::passed}}, {"", ""}, Verdict::failed,
       "1 focus point(s) missed", false},
      {"an allocation refused", {{"a", S::failed}}, {"", "std::bad_alloc"}, Verdict::memory_limit,
       "could not allocate the memory it asked for (std::bad_alloc)", false},
      {"the kernel refused it", {{"a", S::failed}}, {"mmap: can't allocate memory\nat"}, Verdict::memory_limit,
       "(mmap: can't allocate memory)", false},
      {"one error everywhere", {{"a", S::failed}}, {"not implemented yet", "not implemented yet"}, Verdict::failed,
       "Every case stopped with the same error from your code: not implemented yet", false},
      {"skipped, nothing failed", {{"a", S::skipped}}, {""}, Verdict::failed, "Not assessed: 1 check(s) could not run",
       false},
      // Precedence: a forbidden built-in over everything the checks found.
      {"forbidden over a pass", {{"a", S::passed}, {"no_builtins", S::failed}}, {""}, Verdict::forbidden,
       "Forbidden: ", false},
      {"memory over the same error", {{"a", S::failed}}, {"std::bad_alloc", "std::bad_alloc"}, Verdict::memory_limit,
       "could not allocate", false},
  };
  for (const auto& row : rows) {
    SCOPED_TRACE(row.what);
    auto checks = make(row.checks);
    for (size_t i = 0; i < checks.size(); ++i) {
      if (std::string(row.checks[i].focus) == "no_builtins") checks[i].id = kNoBuiltinsCheck;
      checks[i].message = "why " + checks[i].id;
    }
    const auto got = verdict_of_judged(checks, points_of(checks), row.errors, "no GPU here");
    EXPECT_EQ(got.verdict, row.verdict);
    EXPECT_NE(got.summary.find(row.says), std::string::npos) << got.summary;
    EXPECT_EQ(got.full_pass, row.full_pass);
    // The one error every case stopped with makes the report the compact one.
    EXPECT_EQ(got.one_error, std::string(row.says).rfind("Every case stopped", 0) == 0);
  }
}

TEST(Score, AFullAnswerEarnsTheMaximumOnAnyMachine) {
  // Informational and GPU-only checks of a grade without a GPU are outside
  // both the score and the maximum.
  auto exercise = mhsa_with(kGpuCheck, kGpuCheck + " weight: 2,");
  const double all = exercise.max_score(/*on_gpu=*/true);
  EXPECT_DOUBLE_EQ(exercise.max_score(/*on_gpu=*/false), all - 2);

  GradeReport report;
  report.verdict = Verdict::passed;
  for (const auto& spec : exercise.checks) {
    CheckResult result;
    result.id = spec.id;
    result.focus_point = spec.focus_point;
    result.weight = spec.weight;
    result.status = spec.kind == "gpu_execution" ? CheckStatus::skipped : CheckStatus::passed;
    report.checks.push_back(result);
  }
  mark_score_scope(report.checks, exercise, /*on_gpu=*/false);
  report.max_score = exercise.max_score(false);
  EXPECT_DOUBLE_EQ(report.score(), report.max_score);
  for (const auto& check : report.checks) EXPECT_EQ(check.needs_gpu, check.id == "gpu_execution") << check.id;

  // A GPU-only check that ran to a result without a GPU was assessed: in the score.
  {
    auto ran = report.checks;
    for (auto& check : ran) {
      check.needs_gpu = false;
      if (check.id == "gpu_execution") check.status = CheckStatus::failed;
    }
    mark_score_scope(ran, exercise, /*on_gpu=*/false);
    for (const auto& check : ran) EXPECT_FALSE(check.needs_gpu) << check.id;
  }

  // ... and in the grade's maximum.
  {
    auto ran = report.checks;
    for (auto& check : ran) {
      check.needs_gpu = false;
      if (check.id == "gpu_execution") check.status = CheckStatus::failed;
    }
    mark_score_scope(ran, exercise, /*on_gpu=*/false);
    EXPECT_DOUBLE_EQ(max_score_of(ran, exercise, /*on_gpu=*/false), all);
    EXPECT_DOUBLE_EQ(max_score_of(report.checks, exercise, /*on_gpu=*/false), all - 2);
    EXPECT_DOUBLE_EQ(max_score_of({}, exercise, /*on_gpu=*/false), all - 2) << "a grade stopped before any check";
  }

  // On a GPU the same check is in the score.
  auto on_gpu = report;
  for (auto& check : on_gpu.checks) check.needs_gpu = false;
  mark_score_scope(on_gpu.checks, exercise, /*on_gpu=*/true);
  EXPECT_DOUBLE_EQ(on_gpu.score(), all - 2);  // it was skipped: 2 short of the maximum

  // A grade not assessed scores nothing of nothing.
  report.verdict = Verdict::not_assessed;
  EXPECT_DOUBLE_EQ(report.score(), 0);
}

// The CUDA exercise on a machine without nvcc: every check skipped, its
// compile included, is "not assessed here": no failure, 0 of 0.
TEST(Score, ACudaExerciseWithoutNvccIsNotAssessed) {
  const auto exercise = load_exercise(test_support::project_root() / "exercises" / "exercise_softmax_cuda");
  std::vector<CheckResult> checks;
  for (const auto& spec : exercise.checks) {
    CheckResult result;
    result.id = spec.id;
    result.focus_point = spec.focus_point;
    result.weight = spec.weight;
    result.status = CheckStatus::skipped;
    checks.push_back(result);
  }
  mark_score_scope(checks, exercise, /*on_gpu=*/false);
  for (const auto& check : checks) EXPECT_FALSE(in_score(check)) << check.id;
  EXPECT_DOUBLE_EQ(max_score_of(checks, exercise, /*on_gpu=*/false), 0);
  std::vector<FocusPointResult> points;
  for (const auto& point : exercise.focus_points) points.push_back({point, FocusStatus::not_assessed, {}, {}});
  EXPECT_EQ(verdict_of_checks(checks, points).verdict, Verdict::not_assessed);
  // With nvcc the compile ran: a failed compile is in the score and fails.
  checks.front().needs_gpu = false;
  for (auto& check : checks) {
    if (check.id == "compiles") {
      check.status = CheckStatus::failed;
      check.needs_gpu = false;
    }
  }
  mark_score_scope(checks, exercise, /*on_gpu=*/false);
  EXPECT_EQ(verdict_of_checks(checks, points).verdict, Verdict::failed);
}

TEST(ExerciseYaml, AChecksVisibilityIsGradescopes) {
  EXPECT_EQ(mhsa_with(kGpuCheck, kGpuCheck + " visibility: after_due_date,").check("gpu_execution").visibility,
            "after_due_date");
  EXPECT_THROW(mhsa_with(kGpuCheck, kGpuCheck + " visibility: secret,"), ConfigError);
}

TEST(ExerciseYaml, InformationalChecksHaveNoWeight) {
  EXPECT_THROW(mhsa_with(kGpuCheck, kGpuCheck + " informational: true, weight: 0.01,"), ConfigError);
  EXPECT_THROW(mhsa_with(kGpuCheck, kGpuCheck + " informational: maybe,"), ConfigError);
  const auto plain = mhsa_with(kGpuCheck, kGpuCheck);
  auto exercise = mhsa_with(kGpuCheck, kGpuCheck + " informational: true,");
  EXPECT_TRUE(exercise.check("gpu_execution").informational);
  EXPECT_DOUBLE_EQ(exercise.max_score(true), plain.max_score(true) - 1);
}

TEST(WorseExit, BatchStatusOrder) {
  EXPECT_EQ(worse_exit(kExitPassed, kExitNotAssessed), kExitNotAssessed);
  EXPECT_EQ(worse_exit(kExitNotAssessed, kExitNotPassed), kExitNotPassed);
  EXPECT_EQ(worse_exit(kExitNotPassed, kExitNotAssessed), kExitNotPassed);
  EXPECT_EQ(worse_exit(kExitGraderFault, kExitNotAssessed), kExitGraderFault);
  EXPECT_EQ(worse_exit(kExitUsage, kExitNotPassed), kExitUsage);
}

}  // namespace
}  // namespace grader
