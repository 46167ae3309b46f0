// What a submission may include (the compiler's dependency file, checked
// against the allowed places), and the guess of which precompiled header it
// needs. Decided on the text of the paths alone.
#pragma once

#include <filesystem>
#include <set>
#include <string>
#include <vector>

#include "exercise/exercise.h"
#include "judge/toolchain.h"

namespace grader {

// Where a submission's includes may come from: the exercise's interface, the
// toolchain's (LibTorch's) include folders and the system's headers (the C++
// library, the compiler's own). Anything else (another file of this project,
// /dev/stdin, /proc/...) is refused as the learner's compile error.
// Decided on the text of the paths alone: they are the compiler's view inside
// the sandbox, and touching them from the grader (a /proc/self/fd/N, a device)
// would be acting on the learner's behalf. (A compile lists thousands of
// headers: the allowed places are normalised once.)
class IncludePolicy {
 public:
  IncludePolicy(const Toolchain& toolchain, const Exercise& exercise, const std::filesystem::path& pch);
  bool allows(const std::string& header) const;

 private:
  std::set<std::filesystem::path> files_;
  std::vector<std::string> dirs_;  // normalised, no trailing '/'
};

// Headers listed in a make-style dependency file (the compiled files left
// out: the source, or a compile ahead's stub and its pipe); "\ " is an
// escaped space, "$$" an escaped dollar.
std::vector<std::string> depfile_headers(const std::filesystem::path& depfile,
                                         const std::vector<std::filesystem::path>& compiled);

// Whether a line of the source is `#include <torch/torch.h>` (or
// <torch/all.h>), blanks allowed: such a submission is compiled against
// LibTorch's whole API precompiled (a guess that decides only the speed).
// Scanned by hand, line by line: the text is the learner's, up to 1 MB, and a
// regular expression over it can exhaust the stack (libstdc++ recurses per
// character of a repetition).
bool includes_all_of_libtorch(const std::string& text);

}  // namespace grader
