// One grade, step by step: find the exercise, compile the submission, run the
// cases in a child, collect the results, judge and diagnose, build the report.
#pragma once

#include <filesystem>
#include <optional>

#include "checks/check.h"
#include "report.h"
#include "sandbox.h"

namespace grader {

struct GradeOptions {
  std::filesystem::path project_root;  // holds exercises/
  std::filesystem::path build_dir;     // holds toolchain.txt and the runner
  std::string exercise;
  std::optional<std::filesystem::path> submission;  // default: the exercise's learner file
  std::optional<uint64_t> seed;                     // default: a fresh one, printed in the report
  std::optional<double> run_seconds;                // override the exercise's run limits
  std::optional<double> memory_mb;
  std::optional<double> output_kb;
  SandboxStatus sandbox;                    // detect_sandbox() once, shared by parallel grades
  std::vector<std::filesystem::path> hide;  // more folders the sandbox hides (other submissions')
  bool keep_scratch = false;
  bool figures = false;   // compute GradeReport::figures (for the HTML report)
  bool use_cache = true;  // reuse the compiled code of an unchanged submission (build_dir/cache)
  std::string device = "auto";  // cpu, cuda, or auto: cuda where this LibTorch sees a CUDA device
  bool speed = true;            // on a GPU, time a passed submission (exercise.yaml `speed:`)
};

// Where a grade with `device` (cpu, cuda, auto) runs: throws UsageError for an
// unknown name, and for cuda where this LibTorch cannot use a CUDA device (why).
Target resolve_target(const std::string& device);

// Throws UsageError/ConfigError for bad input and GraderFault when the grader
// itself cannot work; everything the submission does becomes a verdict.
GradeReport grade(const GradeOptions& options);

}  // namespace grader
