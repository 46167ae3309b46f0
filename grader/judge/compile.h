// Compiling a submission: the learner's file, against the exercise's fixed
// interface, into a shared object linked with the exercise's library (its
// driver), which the runner loads in the child. The compiler runs as a child
// process with limits too. The pipeline is here; its parts have files of their
// own: the cache (compile_cache.h), what may be included (include_policy.h),
// what the code may not mention (symbol_rules.h), what the sandbox shows
// (confinement.h), the compile ahead of grade watch (early_compile.h), and
// the compiler's command (compile_step.h).
#pragma once

#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "judge/early_compile.h"
#include "exercise/exercise.h"
#include "judge/sandbox.h"
#include "judge/toolchain.h"

namespace grader {

struct CompileResult {
  bool ok = false;
  std::string diagnostics;  // the compiler's messages about the learner's file, trimmed
  std::filesystem::path shared_object;
  std::vector<std::string> forbidden_symbols;  // found in the compiled learner code
  std::string refuses_run;                     // one of them for which the code is not run at all, if any
  double seconds = 0;
  bool cached = false;  // the compiled code came from the cache (unchanged submission)
  bool ahead = false;   // compiled by an EarlyCompile (started before the source was known)
  // A .cu learner file where no nvcc was found: not compiled; the shared
  // object holds the driver alone (which then says so in every case), and
  // this says why, for the report. Never the learner's failure.
  std::string not_compiled;
};

// A submission as read by read_submission: where it came from (what the
// learner is shown) and its text, read once.
struct Submission {
  std::filesystem::path path;
  std::string text;
};

// Sources larger than this are refused (a solution is a few KB).
constexpr uintmax_t kMaxSubmissionBytes = 1 << 20;

// Reads a submission without following a symbolic link (the grader may run as
// root; a link could name a file its author may not read). Throws UsageError
// for a link, a missing, special or oversized file.
std::string read_submission(const std::filesystem::path& file);

// cache_dir: where compiled submissions are kept by content hash (empty: no
// cache). Only the compiler's products are cached (compiled code, or the
// errors of a source that does not compile), never a verdict. A compile of
// the same key under way in another process (the grade script's early
// compile, a parallel grade of the same file) is waited for, and its result
// taken from the cache.
CompileResult compile_submission(const Toolchain& toolchain, const Exercise& exercise, const Submission& submission,
                                 const std::filesystem::path& work_dir, const std::filesystem::path& cache_dir,
                                 const SandboxStatus& sandbox, const Confinement& confinement,
                                 EarlyCompile* ahead = nullptr);

// Keeps the compiler's lines that help: errors and notes about the learner's
// file, with the scratch path replaced by the path the learner knows.
std::string trim_diagnostics(const std::string& text, const std::string& scratch_file, const std::string& shown_as,
                             size_t max_lines = 40);

}  // namespace grader
