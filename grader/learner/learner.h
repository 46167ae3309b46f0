// The learner's commands around a grade (docs/learning.md): the exercises in
// learning order with their progress, hints, the model solution once passed,
// and a reset to the starter that keeps a backup. Each returns the exit status.
#pragma once

#include <filesystem>
#include <optional>

#include "exercise/exercise.h"
#include <string>
#include <vector>

namespace grader {

// The one exercise id a command names (`paths`), or a UsageError saying so.
std::string one_exercise(const std::vector<std::string>& paths, const std::string& command);
// That exercise, loaded (an unknown id: a UsageError with suggestions).
Exercise named_exercise(const std::filesystem::path& root, const std::vector<std::string>& paths,
                        const std::string& command);
// `grade list`
int list(const std::filesystem::path& root);
// `grade show EXERCISE [--checks]`: the statement, without what is checked
// unless `checks` (statement.h).
int show(const std::filesystem::path& root, const std::vector<std::string>& paths, bool checks);
// `grade hint EXERCISE [--focus ID]`
int hint(const std::filesystem::path& root, const std::vector<std::string>& paths, const std::string& focus);
// `grade solution EXERCISE [--reveal]`
int solution(const std::filesystem::path& root, const std::vector<std::string>& paths, bool reveal);
// A file's bytes, whole; nullopt if it cannot be read.
std::optional<std::string> read_whole(const std::filesystem::path& file);
// Now, local time, in strftime's `format`.
std::string local_time(const char* format);
// Now, local time, as names of backups and attempts carry it: 20261126-183012.
std::string local_stamp();
// Saves `text`, the learner's file `name` of `exercise`, whole to a
// timestamped backup (<progress folder>/backups/<exercise>/<name>.<date>-<time>,
// never over another) and returns its path. Throws UsageError if it cannot.
std::filesystem::path save_backup(const std::filesystem::path& root, const Exercise& exercise,
                                  const std::string& name, const std::string& text);
// `grade reset EXERCISE [--blank]`: the learner's file saved to a timestamped
// backup (named in the output), then the starter (exercises/<id>/.starter/)
// back in its place; with `blank`, the blank starter (blank_starter: the
// interface without the steps). Nothing the learner wrote is overwritten
// without a backup.
int reset(const std::filesystem::path& root, const std::vector<std::string>& paths, bool blank = false);

}  // namespace grader
