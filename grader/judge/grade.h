// One grade, step by step: find the exercise, compile the submission, run the
// cases in a child, collect the results, judge and diagnose, build the report.
#pragma once

#include <filesystem>
#include <memory>
#include <optional>

#include "checks/check.h"
#include "report/report.h"
#include "judge/sandbox.h"

namespace grader {

struct GradeOptions {
  std::filesystem::path project_root;  // holds exercises/
  std::filesystem::path build_dir;     // holds toolchain.txt and the runner
  std::string exercise;
  std::optional<std::filesystem::path> submission;  // default: the exercise's learner file
  std::optional<uint64_t> seed;                     // default: a fresh one, printed in the report
  std::optional<double> run_seconds;                // override the exercise's run limits
  std::optional<double> case_seconds;               // override each case's own limit's floor (case_limit.h)
  std::optional<double> memory_mb;
  std::optional<double> output_kb;
  SandboxStatus sandbox;                    // detect_sandbox() once, shared by parallel grades
  std::vector<std::filesystem::path> hide;  // more folders the sandbox hides (other submissions')
  bool keep_scratch = false;
  bool figures = false;   // compute GradeReport::figures (for the HTML report)
  bool use_cache = true;  // reuse the compiled code of an unchanged submission (build_dir/cache)
  std::string device = "auto";  // cpu, cuda, or auto: cuda where this LibTorch sees a CUDA device
  bool speed = true;            // on a GPU, time a passed submission (exercise.yaml `speed:`)
  std::string visibility = "visible";  // Gradescope: when the student sees the grade's tests (--visibility)
  // --within DIR: the submission's real path (links resolved) must lie inside
  // DIR, else it is an invalid submission (a platform's submission folder).
  std::optional<std::filesystem::path> within;
};

// Where a grade with `device` (cpu, cuda, auto) runs: throws UsageError for an
// unknown name, and for cuda where this LibTorch cannot use a CUDA device (why).
Target resolve_target(const std::string& device);

// What a grade starts before it reads the submission: its scratch folder, the
// runner (which loads LibTorch meanwhile) and, with compile_ahead, a compile
// that waits for the source (compile.h: EarlyCompile). `grade watch` prepares
// the next grade as soon as one is shown, so that a save finds both ready.
// Destroying it stops what it started.
struct PreparedGrade;
struct PreparedGradeEnd {
  void operator()(PreparedGrade* prepared) const;
};
using Prepared = std::unique_ptr<PreparedGrade, PreparedGradeEnd>;
Prepared prepare_grade(const GradeOptions& options, bool compile_ahead);

// Throws UsageError/ConfigError for bad input and GraderFault when the grader
// itself cannot work; everything the submission does becomes a verdict.
// `prepared` (prepare_grade with the same options) is used if nothing it was
// prepared from changed since (the exercise, the build), and replaced otherwise.
GradeReport grade(const GradeOptions& options, Prepared prepared = {});

// One submission graded on each of `seeds` (options.seed is ignored), one
// report per seed, each what grade() gives with that seed. The cases of every
// seed run in one runner (LibTorch loads once; its time limits are the
// exercise's times the number of seeds), each seed judged on its own; a run
// that does not end cleanly with every result is graded again seed by seed,
// each in its own runner. What differs from lone grades: a report's program
// output is the whole run's, and a submission that keeps state between calls
// carries it from one seed to the next. No speed run (informational).
std::vector<GradeReport> grade_on_seeds(const GradeOptions& options, const std::vector<uint64_t>& seeds);

}  // namespace grader
