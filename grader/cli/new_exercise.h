// `grade new-exercise ID`: the skeleton of a new exercise, from
// templates/new-exercise/ (its README.md says what goes where).
#pragma once

#include <filesystem>
#include <string>
#include <vector>

namespace grader::cli {

// Writes the skeleton of the exercise `id` ("exercise_" and lower-case
// letters, digits, underscores) into the project at `root` and returns the
// files written. Throws UsageError for a bad id or one whose folders exist
// (nothing is written over).
std::vector<std::filesystem::path> new_exercise(const std::filesystem::path& root, const std::string& id);

}  // namespace grader::cli
