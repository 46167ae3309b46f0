// `grade watch EXERCISE`: grade, show the report, wait until the learner
// saves the file again (inotify on its folder, so editors that save by
// renaming a new file over the old are seen too), grade again; until Ctrl-C.
// A compile error, a crash or a grader fault is shown like any report and the
// watch goes on. Where file events are unavailable (or with --manual), Enter
// re-grades instead.
#pragma once

#include <filesystem>
#include <functional>

#include "judge/grade.h"

namespace grader {

struct WatchOptions {
  std::filesystem::path file;                        // the file whose saves trigger a grade
  bool manual = false;                               // Enter re-grades; no file events
  bool color = false;                                // colour the report, and clear the screen between grades
  std::function<void(const GradeReport&)> on_grade;  // e.g. recording the learner's progress
  bool profile = false;  // after each report, where its time went from the save (base/profile.h)
};

// Returns the exit status of the last grade (0 passed, 1 not, 3 grader fault).
int watch(const GradeOptions& options, const WatchOptions& watch_options);

}  // namespace grader
