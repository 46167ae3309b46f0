// Compiling a submission: the learner's file, against the exercise's fixed
// interface, into a shared object with the exercise's driver, which the runner
// loads in the child. The compiler runs as a child process with limits too.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "exercise.h"
#include "sandbox.h"
#include "toolchain.h"

namespace grader {

struct CompileResult {
  bool ok = false;
  std::string diagnostics;  // the compiler's messages about the learner's file, trimmed
  std::filesystem::path shared_object;
  std::vector<std::string> forbidden_symbols;  // found in the compiled learner code
  double seconds = 0;
  bool cached = false;  // the compiled code came from the cache (unchanged submission)
};

// cache_dir: where compiled submissions are kept by content hash (empty: no
// cache). Only compiled code is cached, never a verdict.
CompileResult compile_submission(const Toolchain& toolchain, const Exercise& exercise,
                                 const std::filesystem::path& submission, const std::filesystem::path& work_dir,
                                 const std::filesystem::path& project_root, const std::filesystem::path& cache_dir,
                                 const SandboxStatus& sandbox, const Confinement& confinement);

// Keeps the compiler's lines that help: errors and notes about the learner's
// file, with the scratch path replaced by the path the learner knows.
std::string trim_diagnostics(const std::string& text, const std::string& scratch_file, const std::string& shown_as,
                             size_t max_lines = 40);

}  // namespace grader
