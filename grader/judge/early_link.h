// A link started before its object exists: the linker's process, and the
// sandbox around it, start while the source compiles (or, in grade watch,
// while the learner edits: about 50 ms of a grade on two cores). The linker
// then reads the object from a pipe on fd 3, named /dev/fd/3 on its command
// line, which gives the same shared object as the file would. Destroyed
// unused, it is stopped before it wrote anything.
#pragma once

#include <filesystem>
#include <memory>
#include <string>

#include "judge/compile_step.h"
#include "judge/process.h"

namespace grader {

class EarlyLink {
 public:
  // Started where the build knows the linker's own command (a link through
  // the compiler's driver is not started early); null otherwise.
  static std::unique_ptr<EarlyLink> start(const Step& step, const Toolchain& toolchain,
                                          const std::filesystem::path& library, const std::filesystem::path& pch,
                                          const std::filesystem::path& output);
  EarlyLink(ChildSpec spec, std::filesystem::path output) : child_(std::move(spec)), output_(std::move(output)) {}

  bool waiting() const { return child_.waiting(); }  // started, and still waiting for its object
  const std::filesystem::path& output() const { return output_; }  // the shared object it writes
  // Gives it the object's bytes and waits for its end. Its messages name
  // `object`, as a link of that file would.
  ChildOutcome finish(std::string object_bytes, const std::filesystem::path& object);

 private:
  EarlyChild child_;
  std::filesystem::path output_;
};

}  // namespace grader
