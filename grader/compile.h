// Compiling a submission: the learner's file, against the exercise's fixed
// interface, into a shared object linked with the exercise's library (its
// driver), which the runner loads in the child. The compiler runs as a child
// process with limits too.
#pragma once

#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "exercise.h"
#include "process.h"
#include "sandbox.h"
#include "toolchain.h"

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

// What the sandbox shows a grade's compiler, linker and runner besides the
// system's programs and libraries (sandbox.cpp): the toolchain's headers and
// libraries, the exercise's interface header alone, the grader's own files
// each step needs, and the scratch folder (writable). The project, the build
// folder, the submission's folder and `hide` are hidden even where they lie
// inside the system's folders.
Confinement grade_confinement(const Toolchain& toolchain, const Exercise& exercise,
                              const std::filesystem::path& project_root, const std::filesystem::path& build_dir,
                              const std::filesystem::path& submission_dir,
                              const std::vector<std::filesystem::path>& hide, const std::filesystem::path& scratch);

// Whether a line of the source is `#include <torch/torch.h>` (or
// <torch/all.h>), blanks allowed: such a submission is compiled against
// LibTorch's whole API precompiled (a guess that decides only the speed).
bool includes_all_of_libtorch(const std::string& text);

// A compile started before its source is known: `grade watch` starts one for
// the next save while the learner edits. The compiler loads the precompiled
// header and does the first-use work every compile against it repeats (about
// 0.3 s), then waits for the source, which a stub file includes from a pipe.
// Its wall-clock limit counts from the source's arrival; compile_submission
// uses it when it loaded the header the source needs, and compiles the source
// as itself otherwise. Destroyed unused, it is stopped.
class EarlyCompile {
 public:
  // In work_dir (the next grade's scratch folder), for a source that does (or
  // not) include all of LibTorch's API. Starts nothing for a CUDA exercise.
  EarlyCompile(const Toolchain& toolchain, const Exercise& exercise, const std::filesystem::path& work_dir,
               bool libtorch_api, const SandboxStatus& sandbox, const Confinement& confinement);
  ~EarlyCompile();
  EarlyCompile(const EarlyCompile&) = delete;
  EarlyCompile& operator=(const EarlyCompile&) = delete;

  bool waiting() const;  // started, and still waiting for its source
  const std::filesystem::path& pch() const { return pch_; }
  const std::vector<std::string>& argv() const { return argv_; }
  const std::filesystem::path& stub() const { return stub_; }  // the file compiled
  const std::filesystem::path& pipe() const { return pipe_; }  // the link to the pipe it reads the source from
  const std::string& token() const { return token_; }          // the random part of their names
  ChildOutcome finish(std::string source_text) { return child_->finish(std::move(source_text)); }

 private:
  std::filesystem::path pch_, stub_, pipe_;
  std::string token_;
  std::vector<std::string> argv_;
  std::unique_ptr<EarlyChild> child_;
};

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

// The forbidden names in a submission's symbol table (`readelf --syms --wide` output, not
// demangled): the judge's own list, and the exercise's built-ins. One line
// each in `all`; `refuses_run` repeats the first whose code must not run at
// all (it defines or calls the grader's own code), empty when none.
struct SymbolFindings {
  std::vector<std::string> all;
  std::string refuses_run;
};
SymbolFindings forbidden_symbols_in(const std::string& symbol_table, const Exercise& exercise);

// What the compiled code's bytes (its string constants) show it doing that
// attention code never does (reading /proc): one line each.
std::vector<std::string> forbidden_text_in(const std::string& object_bytes);

// Keeps the compiler's lines that help: errors and notes about the learner's
// file, with the scratch path replaced by the path the learner knows.
std::string trim_diagnostics(const std::string& text, const std::string& scratch_file, const std::string& shown_as,
                             size_t max_lines = 40);

}  // namespace grader
