// The follow-up questions of a mock interview (docs/learning.md: Mock interviews): an
// exercise's .grader/questions.yaml (kQuestionsFile: the grader's data, kept out of
// the files a learner opens, since it holds the answers). Every question belongs
// to a focus point and has exactly one checkable answer: a choice (a letter),
// a number or a shape computed by the grader from an expression over named
// dimensions, or the line of a short listing that is wrong. No free text.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "exercise/exercise.h"
#include "report/report.h"

namespace grader {

// Where an exercise keeps its follow-up questions, relative to its folder.
inline constexpr const char* kQuestionsFile = ".grader/questions.yaml";

struct Question {
  enum class Kind { choice, number, shape, line };
  std::string id;
  std::string focus_point;
  std::string ask;
  Kind kind = Kind::choice;
  std::vector<std::string> choices;  // choice: shown as a), b), ...
  size_t answer = 0;                 // choice: index of the right one; line: 1-based line
  double number = 0;                 // number: computed when loaded
  std::vector<int64_t> shape;        // shape: computed when loaded
  std::vector<std::string> listing;  // line: the numbered lines shown
  std::string explain;

  // How the question is put to the learner (without its answer).
  std::string prompt() const;
  // Whether `given` (as typed: "b", "2.83", "(2, 8, 10, 64)", "3") is right.
  bool accepts(const std::string& given) const;
  // The right answer, as a learner reads it ("b) all three take the same x").
  std::string right_answer() const;
};

// The questions of `exercise` (exercises/<id>/.grader/questions.yaml); empty when it
// has none. Throws ConfigError naming the file and the question for anything
// malformed: an unknown focus point, no or two kinds of answer, fewer than
// three choices or two alike, an answer outside the choices or the listing.
std::vector<Question> load_questions(const Exercise& exercise);

// The follow-ups for a grade: up to `per_missed` questions on each focus point
// the grade missed (in the exercise's order), then `met_sample` questions on
// focus points it met, drawn with `seed`. A grade that stopped before its
// checks (compile error, crash) measured nothing: a sample of all its focus
// points is asked instead.
std::vector<const Question*> select_follow_ups(const std::vector<Question>& bank, const GradeReport& report,
                                               uint64_t seed, size_t per_missed = 2, size_t met_sample = 2);

}  // namespace grader
