// Mock interviews (docs/learning.md: Mock interviews): `grade interview [EXERCISE]`
// runs one as an interviewer would: the task and a clock, a grade on submit
// (or at the deadline), then follow-up questions chosen from what the grade
// found, each answered and explained; the whole is appended to the learner's
// progress file. `grade interview --report` shows readiness per focus point
// across interviews.
#pragma once

#include <filesystem>
#include <istream>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "judge/grade.h"
#include "learner/progress.h"

namespace grader {

struct InterviewOptions {
  double minutes = 45;  // the time allowed for the code
  // Non-interactive: the learner's input from this file, one line each: first
  // "submit" (grade now) or "wait" (let the clock run out), then one answer
  // per follow-up. Otherwise standard input.
  std::optional<std::filesystem::path> answers;
  bool color = false;
  bool record_grade = true;  // the learner's own file: its grade updates `grade list` too
  // The learner's own file as it is (otherwise, without a --submission, the
  // interview starts from a blank page: a fresh copy of the starter).
  bool resume = false;
};

// Runs one interview on options.exercise; empty: the exercise the record
// suggests (printed with the reason). Returns the grade's exit status.
int interview(GradeOptions options, const InterviewOptions& how, std::ostream& out);

// `grade interview --report [--format html]`: readiness per focus point
// across interviews, as text or as one self-contained page.
int interview_report(const std::filesystem::path& root, std::ostream& out, const std::string& format = "text");

// The exercise to practise next and why: the one with the most focus points
// still weak (missed at its last interview or last grade, or a follow-up
// answered wrong), else the first not yet passed in learning order.
std::string suggest_exercise(const std::filesystem::path& root, const Progress& progress, std::string& why);

}  // namespace grader
