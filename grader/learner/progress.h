// The learner's progress: per exercise, not started / failing / passed / not assessed and
// the focus points still missed, kept in one JSON file that every grade of
// the learner's own file updates (docs/learning.md). Updates are
// read-modify-write under a lock, and the file is replaced whole (written
// beside it, synced, renamed over it), so an interrupted grade leaves the
// previous progress, never half a file.
#pragma once

#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "report/report.h"

namespace grader {

struct ExerciseProgress {
  std::string status;               // "passed", "failing", "not_assessed" (no GPU for a CUDA exercise), or empty: not graded yet
  std::vector<std::string> missed;  // focus points missed at the last grade
  std::string last_graded;          // UTC, ISO 8601
  std::string first_passed;         // UTC, ISO 8601; empty: never passed
  int grades = 0;
  std::map<std::string, int> hints_seen;  // focus point -> how many of its hints were shown
};

// One mock interview (grade interview): the grade, the time it took, and the
// follow-up questions with whether each was answered right.
struct InterviewAnswer {
  std::string question;  // its id in the exercise's questions.yaml
  std::string focus_point;
  bool answered = false;
  bool right = false;
};

struct InterviewRecord {
  std::string exercise;
  std::string started;  // UTC, ISO 8601
  double minutes = 0;   // the time allowed
  double seconds_used = 0;
  bool timed_out = false;  // graded at the deadline, not on submit
  std::string verdict;
  std::vector<std::string> missed;  // focus points the grade missed
  std::vector<std::string> met;     // and those it met
  std::vector<InterviewAnswer> answers;
};

struct Progress {
  std::map<std::string, ExerciseProgress> exercises;
  std::vector<InterviewRecord> interviews;  // oldest first
  bool ever_passed(const std::string& exercise) const;
};

// GRADE_PROGRESS when set, else <project_root>/.learner/progress.json.
std::filesystem::path progress_file(const std::filesystem::path& project_root);

// An absent file is no progress. A file that is not progress (edited by hand,
// or from a newer grader) is moved aside, named in `notice`, and not lost.
Progress load_progress(const std::filesystem::path& file, std::string* notice = nullptr);

// Records one grade of the learner's own file. A grade that stopped before
// any check (compile error, crash, limits) is failing with nothing missed; a
// grader fault is not the learner's and records nothing. Returns a notice
// for the learner (an unreadable file moved aside), or nothing.
std::string record_grade(const std::filesystem::path& file, const GradeReport& report);

// Appends one interview to the file (read-modify-write under its lock, the
// file replaced whole). Returns a notice as record_grade does.
std::string record_interview(const std::filesystem::path& file, const InterviewRecord& record);

// UTC now, ISO 8601 ("2026-11-23T04:12:00Z").
std::string utc_now();

// Marks the next hint of `focus_point` as seen and returns its index (0:
// the least detailed); past the last of `available`, the last again.
int take_hint(const std::filesystem::path& file, const std::string& exercise, const std::string& focus_point,
              int available);

}  // namespace grader
