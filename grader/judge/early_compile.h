// A compile started before its source is known: `grade watch` starts one for
// the next save while the learner edits. The compiler loads the precompiled
// header and does the first-use work every compile against it repeats (about
// 0.3 s), then waits for the source, which a stub file includes from a pipe.
// Its wall-clock limit counts from the source's arrival; compile_submission
// uses it when it loaded the header the source needs, and compiles the source
// as itself otherwise. The link of its object is started with it
// (EarlyLink). Destroyed unused, both are stopped.
#pragma once

#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "exercise/exercise.h"
#include "judge/early_link.h"
#include "judge/process.h"
#include "judge/sandbox.h"
#include "judge/toolchain.h"

namespace grader {

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
  const std::filesystem::path& stub() const { return stub_; }  // the file compiled
  const std::filesystem::path& pipe() const { return pipe_; }  // the link to the pipe it reads the source from
  // What a compile cache key takes of it: its command with the random part of
  // its files' names left out, and the stub's text.
  std::vector<std::string> key_argv() const;
  static const char* stub_text();
  // Gives it `text`, the source written at `source`, and waits for its end.
  // The source keeps its lines and its file name in the compiler's messages,
  // which hold no line of the stub.
  ChildOutcome finish(const std::string& text, const std::filesystem::path& source);
  // The link started with it, for its object (work_dir's submission.so, with
  // the libraries its header needs); null where none was started. Once.
  std::unique_ptr<EarlyLink> take_linker() { return std::move(linker_); }

 private:
  std::filesystem::path pch_, stub_, pipe_;
  std::string token_;
  std::vector<std::string> argv_;
  std::unique_ptr<EarlyChild> child_;
  std::unique_ptr<EarlyLink> linker_;
};

}  // namespace grader
