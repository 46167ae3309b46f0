// What a submission may include (the compiler's dependency file, checked
// against the allowed places), and the guess of which precompiled header it
// needs.
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
// Decided on the text of the path, then on where its links lead: a path that
// reads as an allowed folder's must also resolve inside one (links resolved
// in the grader's view, which shows the same files at the same paths). A path
// with a /proc or /dev component is refused before anything is resolved: the
// grader's own descriptors would answer for the compiler's. (A compile lists
// thousands of headers: the allowed places are normalised once.)
class IncludePolicy {
 public:
  IncludePolicy(const Toolchain& toolchain, const Exercise& exercise, const std::filesystem::path& pch);
  bool allows(const std::string& header) const;

 private:
  // The path with every link resolved (as far as it exists), else as written.
  static std::filesystem::path real_path(const std::filesystem::path& path);
  static bool inside(const std::filesystem::path& path, const std::set<std::filesystem::path>& files,
                     const std::vector<std::string>& dirs);
  std::set<std::filesystem::path> files_, real_files_;
  std::vector<std::string> dirs_, real_dirs_;  // normalised (real: links resolved), no trailing '/'
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
