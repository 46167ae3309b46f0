#include "exercise/discovery.h"

#include <algorithm>
#include <cctype>
#include <system_error>

#include "judge/compile.h"
#include "base/errors.h"

namespace grader {
namespace fs = std::filesystem;

namespace {

std::string lower(std::string text) {
  std::transform(text.begin(), text.end(), text.begin(), [](unsigned char c) { return std::tolower(c); });
  return text;
}

// A copy's suffix as file managers and browsers add it: " (1)", "(2)",
// " copy", "-copy", "_copy", "-1", "_2", " 3".
bool copy_suffix(const std::string& rest) {
  if (rest.empty()) return false;
  for (const char* word : {" copy", "-copy", "_copy", " - copy"}) {
    if (rest == word) return true;
  }
  size_t at = 0;
  while (at < rest.size() && rest[at] == ' ') ++at;
  const bool parenthesised = at < rest.size() && rest[at] == '(';
  if (parenthesised) ++at;
  if (!parenthesised && at == 0) {
    if (rest[0] != '-' && rest[0] != '_') return false;
    at = 1;
  }
  const size_t digits = at;
  while (at < rest.size() && std::isdigit(static_cast<unsigned char>(rest[at]))) ++at;
  if (at == digits) return false;
  if (parenthesised) {
    if (at >= rest.size() || rest[at] != ')') return false;
    ++at;
  }
  return at == rest.size();
}

// Where `path` really leads, if it stays inside `inside` (both real paths).
bool within(const fs::path& path, const fs::path& inside) {
  auto p = path.begin();
  for (auto i = inside.begin(); i != inside.end(); ++i, ++p) {
    if (p == path.end() || *p != *i) return false;
  }
  return true;
}

// The student's name for `path` (relative to the student's folder).
std::string shown(const fs::path& path, const fs::path& student_dir) {
  return path.lexically_relative(student_dir).string();
}

}  // namespace

bool inside_folder(const fs::path& path, const fs::path& folder) {
  std::error_code error;
  const auto real = fs::canonical(path, error);
  if (error) return false;
  const auto real_folder = fs::canonical(folder, error);
  return !error && within(real, real_folder);
}

bool near_miss(const std::string& name, const std::string& wanted) {
  if (name == wanted) return false;
  const auto got = lower(name), want = lower(wanted);
  if (got == want) return true;  // another case
  const auto want_stem = lower(fs::path(wanted).stem().string());
  const auto want_ext = lower(fs::path(wanted).extension().string());
  const auto got_stem = lower(fs::path(name).stem().string());
  const auto got_ext = lower(fs::path(name).extension().string());
  if (got.rfind(want + ".", 0) == 0) return true;          // sdpa.cpp.txt
  if (got_stem == want_stem && got_ext != want_ext) return true;  // sdpa.cc
  return got_ext == want_ext && got_stem.rfind(want_stem, 0) == 0 && copy_suffix(got_stem.substr(want_stem.size()));
}

Discovery find_answer(const fs::path& student_dir, const Exercise& exercise) {
  Discovery found;
  const auto& name = exercise.learner_files.front();
  std::error_code error;
  const auto real_dir = fs::canonical(student_dir, error);
  if (error) {
    found.invalid = "the student's folder cannot be read (" + error.message() + ")";
    return found;
  }
  // The two places: beside the student's folder's other files, or where the learner repository keeps it.
  const std::string in_repository = "exercises/" + exercise.id + "/" + name;
  std::vector<fs::path> answers;
  for (const auto& candidate : {student_dir / name, student_dir / in_repository}) {
    auto status = fs::symlink_status(candidate, error);
    if (error || !fs::exists(status)) {
      // A folder on the way that cannot be entered hides an answer: say so.
      if (error && error != std::errc::no_such_file_or_directory && error != std::errc::not_a_directory) {
        found.invalid = shown(candidate, student_dir) + " cannot be read (" + error.message() + ")";
        return found;
      }
      continue;
    }
    const auto real = fs::canonical(candidate, error);
    if (error) {
      found.invalid = shown(candidate, student_dir) + " is a symbolic link that leads nowhere (" + error.message() + ")";
      return found;
    }
    if (!within(real, real_dir)) {
      found.invalid = shown(candidate, student_dir) +
                      " leads out of the student's folder through a symbolic link (to " + real.string() +
                      "): only files inside the student's own folder are graded (copy the file in instead)";
      return found;
    }
    answers.push_back(real);
  }
  if (answers.size() == 2 && answers[0] != answers[1]) {
    try {
      if (read_submission(answers[0]) != read_submission(answers[1])) {
        found.invalid = "two different answers: " + name + " and " + in_repository +
                        "; keep the one to be graded and remove the other";
        return found;
      }
    } catch (const UsageError& unreadable) {
      found.invalid = unreadable.what();
      return found;
    }
    found.warnings.push_back("the same answer is in " + name + " and " + in_repository + "; " + name + " was graded");
  }
  if (!answers.empty()) {
    found.answer = answers.front();
    return found;
  }
  // Nothing by that name: files that look meant for it.
  for (const auto& dir : {student_dir, student_dir / "exercises" / exercise.id}) {
    if (!fs::is_directory(fs::symlink_status(dir, error)) || !inside_folder(dir, student_dir)) continue;
    for (const auto& entry : fs::directory_iterator(dir, error)) {
      const auto file = entry.path().filename().string();
      if (near_miss(file, name)) {
        found.warnings.push_back("no " + name + ", but " + shown(entry.path(), student_dir) +
                                 " looks meant for it: name it " + name + " to have it graded");
      }
    }
  }
  std::sort(found.warnings.begin(), found.warnings.end());
  return found;
}

}  // namespace grader
