#include "learner/learner.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <ctime>
#include <fstream>
#include <iostream>
#include <optional>
#include <sstream>

#include "base/errors.h"
#include "exercise/exercise.h"
#include "report/formats.h"
#include "learner/progress.h"
#include "exercise/statement.h"

namespace grader {
namespace fs = std::filesystem;

std::string one_exercise(const std::vector<std::string>& paths, const std::string& command) {
  if (paths.size() != 1) throw UsageError(command + ": name one exercise (see: grade list)");
  return paths.front();
}

Exercise named_exercise(const fs::path& root, const std::vector<std::string>& paths, const std::string& command) {
  return load_exercise(find_exercise_dir(root / "exercises", one_exercise(paths, command)));
}

std::optional<std::string> read_whole(const fs::path& file) {
  std::ifstream in(file, std::ios::binary);
  if (!in) return std::nullopt;
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

std::string local_time(const char* format) {
  std::time_t now = std::time(nullptr);
  std::tm local{};
  localtime_r(&now, &local);
  char text[64];
  return std::strftime(text, sizeof text, format, &local) ? text : "";
}

std::string local_stamp() { return local_time("%Y%m%d-%H%M%S"); }

// `grade list`: the exercises in learning order, with this learner's progress.
int list(const fs::path& root) {
  const auto exercises = load_exercises_in_order(root / "exercises");
  std::string notice;
  const auto file = progress_file(root);
  auto progress = load_progress(file, &notice);
  if (!notice.empty()) std::cerr << "grade: " << notice << "\n";
  size_t width = 8, passed = 0;
  for (const auto& exercise : exercises) width = std::max(width, exercise.id.size());
  for (const auto& exercise : exercises) {
    auto found = progress.exercises.find(exercise.id);
    std::string status =
        found == progress.exercises.end() || found->second.status.empty() ? "not started" : found->second.status;
    std::replace(status.begin(), status.end(), '_', ' ');
    const bool missed = found != progress.exercises.end() && !found->second.missed.empty();
    passed += status == "passed";
    std::cout << fmt::format("{:<{}}  {:<11}  {:<6}  {:>7}  {}{}\n", exercise.id, width, status,
                             exercise.difficulty.empty() ? "-" : exercise.difficulty,
                             exercise.minutes ? fmt::format("{} min", exercise.minutes) : "-", exercise.title,
                             missed ? fmt::format("  (missed: {})", fmt::join(found->second.missed, ", ")) : "");
  }
  std::cout << fmt::format("{} of {} passed (progress: {})\n", passed, exercises.size(), file.string());
  return 0;
}

// `grade hint EXERCISE [--focus ID]`: the next hint, least detail first; for
// the focus points the last grade missed first, in the exercise's order.
int show(const fs::path& root, const std::vector<std::string>& paths, bool checks) {
  auto exercise = named_exercise(root, paths, "show");
  const auto file = exercise.dir / "README.md";
  auto text = read_whole(file);
  if (!text) throw GraderFault("cannot read " + file.string());
  std::cout << statement_text(*text, exercise.id, checks);
  return 0;
}

int hint(const fs::path& root, const std::vector<std::string>& paths, const std::string& focus) {
  auto exercise = named_exercise(root, paths, "hint");
  const auto file = progress_file(root);
  auto progress = load_progress(file);
  const auto& mine = progress.exercises[exercise.id];
  auto levels = [](const FocusPoint& point) {
    auto all = point.hints;
    all.push_back(point.explanation);  // the last hint: what an interviewer expects to hear
    return all;
  };
  std::vector<const FocusPoint*> candidates;
  if (!focus.empty()) {
    std::string ids;
    for (const auto& point : exercise.focus_points) {
      if (point.id == focus) candidates.push_back(&point);
      ids += (ids.empty() ? "" : ", ") + point.id;
    }
    if (candidates.empty())
      throw UsageError("hint: no focus point '" + focus + "' in " + exercise.id + " (" + ids + ")");
  } else {
    for (const auto& point : exercise.focus_points) {
      if (std::find(mine.missed.begin(), mine.missed.end(), point.id) != mine.missed.end()) {
        candidates.push_back(&point);
      }
    }
    if (candidates.empty()) {
      for (const auto& point : exercise.focus_points) candidates.push_back(&point);
    }
  }
  // The first candidate with hints not yet seen; all seen: the first again, in full.
  const FocusPoint* chosen = candidates.front();
  for (const auto* point : candidates) {
    auto seen = mine.hints_seen.find(point->id);
    if (seen == mine.hints_seen.end() || seen->second < static_cast<int>(levels(*point).size())) {
      chosen = point;
      break;
    }
  }
  const auto texts = levels(*chosen);
  const auto before = mine.hints_seen.find(chosen->id);
  const bool repeated = before != mine.hints_seen.end() && before->second >= static_cast<int>(texts.size());
  const int shown = take_hint(file, exercise.id, chosen->id, static_cast<int>(texts.size()));
  if (repeated) {
    // Said, not repeated silently: where else there is something new.
    std::vector<std::string> left;
    for (const auto& point : exercise.focus_points) {
      auto seen = mine.hints_seen.find(point.id);
      if (seen == mine.hints_seen.end() || seen->second < static_cast<int>(levels(point).size()))
        left.push_back(point.id);
    }
    std::cout << fmt::format("You have seen every hint on '{}'; here is the last one again.", chosen->id);
    if (!left.empty()) {
      std::cout << fmt::format(" Focus points with hints you have not seen: {} (./grade hint {} --focus ID).",
                               fmt::join(left, ", "), exercise.id);
    }
    std::cout << "\n\n";
  }
  if (!mine.missed.empty() && focus.empty()) {
    std::cout << fmt::format("Your last grade missed: {}.\n\n", fmt::join(mine.missed, ", "));
  }
  std::cout << fmt::format("Hint {} of {} on '{}' ({}):\n\n  {}\n\n", shown + 1, texts.size(), chosen->id,
                           chosen->title, texts[shown]);
  if (shown + 1 < static_cast<int>(texts.size())) {
    std::cout << "More detail: ./grade hint " << exercise.id << "\n";
  } else {
    std::cout << "That is all on '" << chosen->id << "'. Other focus points: ./grade hint " << exercise.id
              << " --focus ID (ids in exercises/" << exercise.id << "/exercise.yaml)\n";
  }
  return 0;
}

// `grade solution EXERCISE [--reveal]`: the model solution, once passed.
int solution(const fs::path& root, const std::vector<std::string>& paths, bool reveal) {
  auto exercise = named_exercise(root, paths, "solution");
  auto progress = load_progress(progress_file(root));
  if (!reveal && !progress.ever_passed(exercise.id)) {
    std::cout << "The model solution of " << exercise.id << " opens once you have passed it (./grade " << exercise.id
              << "). Stuck? Read the explanations of the focus points you missed in the report.\n"
              << "To read it anyway: ./grade solution " << exercise.id << " --reveal\n";
    return kExitNotPassed;
  }
  std::vector<fs::path> files;
  for (const auto& entry : fs::directory_iterator(root / "solutions" / exercise.id)) {
    if (entry.is_regular_file()) files.push_back(entry.path());
  }
  if (files.empty()) throw UsageError("no model solution in solutions/" + exercise.id);
  std::sort(files.begin(), files.end());
  for (const auto& file : files) {
    std::ifstream in(file, std::ios::binary);
    std::cout << "// ===== " << fs::relative(file, root).string() << " =====\n" << in.rdbuf() << "\n";
  }
  return 0;
}

fs::path save_backup(const fs::path& root, const Exercise& exercise, const std::string& name, const std::string& text) {
  const auto stamp = local_stamp();
  const auto folder = progress_file(root).parent_path() / "backups" / exercise.id;
  std::error_code error;
  fs::create_directories(folder, error);
  if (error) throw UsageError("cannot save your file to " + folder.string() + ": " + error.message());
  auto backup = folder / (name + "." + stamp);
  for (int n = 2; fs::exists(backup); ++n) backup = folder / fmt::format("{}.{}-{}", name, stamp, n);
  write_report_file(backup, text);
  return backup;
}

int reset(const fs::path& root, const std::vector<std::string>& paths, bool blank) {
  auto exercise = named_exercise(root, paths, "reset");
  const auto& name = exercise.learner_files.front();
  const auto file = exercise.dir / name;
  auto starter = read_whole(exercise.dir / ".starter" / name);
  if (!starter)
    throw GraderFault("no starter to restore: " + (exercise.dir / ".starter" / name).string() + " is missing");
  if (blank) starter = blank_starter(*starter);
  const std::string which = blank ? "the blank starter" : "the starter";
  const auto yours = read_whole(file);
  if (yours && *yours == *starter) {
    std::cout << fs::relative(file, root).string() << " is " << which << " already: nothing to do.\n";
    return 0;
  }
  if (yours) {
    // Saved first, whole; the starter goes back only once the copy is safe.
    const auto backup = save_backup(root, exercise, name, *yours);
    std::cout << "Your " << fs::relative(file, root).string() << " is saved as " << backup.string() << "\n";
  }
  write_report_file(file, *starter);
  std::cout << fs::relative(file, root).string() << " is " << which
            << (blank ? " (the interface, without the steps; `grade show` has the task)" : " again") << ".\n";
  return 0;
}

}  // namespace grader
