// A word on a slow compile that the learner's include explains. A file that
// includes <torch/torch.h> (or <torch/all.h>) brings all of LibTorch's C++ API;
// the exercise's own header already has what the exercise needs. Whether that
// made this compile slow is measured, not assumed: against this machine's last
// compile of a file of the same exercise that includes only the exercise's
// header (kept in the build's cache folder).
#pragma once

#include <filesystem>
#include <optional>
#include <string>

namespace grader {

// The last uncached compile times of one exercise's files, by what they include.
struct CompileTimes {
  std::optional<double> header_only;  // the exercise's header, not all of LibTorch's API
  std::optional<double> whole_api;    // <torch/torch.h> or <torch/all.h>
};

// `file` (JSON; missing or unreadable: nothing known) for `exercise`.
CompileTimes load_compile_times(const std::filesystem::path& file, const std::string& exercise);
// Keeps `seconds` as the exercise's latest for its kind (written whole, by a
// rename: grades beside each other never leave half a file; the last one wins).
void record_compile_time(const std::filesystem::path& file, const std::string& exercise, bool whole_api,
                         double seconds);

// The note for a compile of `seconds` by a file that includes all of
// LibTorch's API (`whole_api`), where the same exercise's header-only file
// took `header_only` here; empty unless the include made it at least twice as
// slow and a second or more longer. `header` is the exercise's interface header.
std::string include_note(bool whole_api, double seconds, const std::optional<double>& header_only,
                         const std::string& header);

}  // namespace grader
