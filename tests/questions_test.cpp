// The mock interview's question banks and its record: every bank loads, every
// question has exactly one right answer that the checker accepts (and the
// others it refuses), computed answers are computed, follow-ups are chosen
// from what the grade found, and interviews are appended to the progress file
// without losing anything.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>
#include <thread>

#include "base/errors.h"
#include "exercise/exercise.h"
#include "learner/progress.h"
#include "exercise/questions.h"
#include "project_root.h"

namespace grader {
namespace {
namespace fs = std::filesystem;

fs::path root() { return test_support::project_root(); }

// Every exercise has a bank, with at least three questions on each focus point.
TEST(Questions, EveryBankCoversEveryFocusPoint) {
  std::vector<std::string> without;
  for (const auto& id : list_exercises(root() / "exercises")) {
    auto exercise = load_exercise(root() / "exercises" / id);
    std::vector<Question> bank;
    ASSERT_NO_THROW(bank = load_questions(exercise)) << id;
    if (bank.empty()) {
      without.push_back(id);
      continue;
    }
    for (const auto& point : exercise.focus_points) {
      auto count = std::count_if(bank.begin(), bank.end(), [&](const auto& q) { return q.focus_point == point.id; });
      EXPECT_GE(count, 3) << id << ": focus point '" << point.id << "' has " << count << " question(s)";
    }
  }
  std::string list;
  for (const auto& id : without) list += " " + id;
  EXPECT_TRUE(without.empty()) << "exercises without follow-up questions (exercises/<id>/.grader/questions.yaml):" << list;
}

// Each question accepts its own right answer and refuses every other choice,
// line, and a nearby wrong number or shape: exactly one answer is right.
TEST(Questions, ExactlyOneAnswerIsRight) {
  for (const auto& id : list_exercises(root() / "exercises")) {
    for (const auto& q : load_questions(load_exercise(root() / "exercises" / id))) {
      SCOPED_TRACE(id + "/" + q.id);
      switch (q.kind) {
        case Question::Kind::choice:
          for (size_t i = 0; i < q.choices.size(); ++i) {
            EXPECT_EQ(q.accepts(std::string(1, static_cast<char>('a' + i))), i == q.answer);
          }
          EXPECT_TRUE(q.accepts(std::string(1, static_cast<char>('A' + q.answer)) + ")"));
          break;
        case Question::Kind::line:
          for (size_t line = 1; line <= q.listing.size(); ++line) EXPECT_EQ(q.accepts(std::to_string(line)), line == q.answer);
          break;
        case Question::Kind::number:
          EXPECT_TRUE(q.accepts(q.right_answer()));
          EXPECT_FALSE(q.accepts(std::to_string(q.number * 1.1 + 1)));
          break;
        case Question::Kind::shape: {
          EXPECT_TRUE(q.accepts(q.right_answer()));
          auto other = q.shape;
          other.back() += 1;
          std::string text;
          for (auto d : other) text += std::to_string(d) + " ";
          EXPECT_FALSE(q.accepts(text));
          break;
        }
      }
      EXPECT_FALSE(q.accepts(""));
      EXPECT_FALSE(q.accepts("I think it depends"));
    }
  }
}

TEST(Questions, AnswersAreComputedAndReadAsTyped) {
  auto mhsa = load_exercise(root() / "exercises" / "exercise_mhsa");
  auto bank = load_questions(mhsa);
  auto find = [&](const std::string& id) -> const Question& {
    for (const auto& q : bank) {
      if (q.id == id) return q;
    }
    throw std::runtime_error("no question " + id);
  };
  EXPECT_EQ(find("split_shape").shape, (std::vector<int64_t>{2, 8, 10, 64}));  // [B, H, N, D/H]
  for (const char* typed : {"(2, 8, 10, 64)", "[2,8,10,64]", "2 8 10 64", "2x8x10x64"})
    EXPECT_TRUE(find("split_shape").accepts(typed)) << typed;
  EXPECT_FALSE(find("split_shape").accepts("(2, 10, 8, 64)"));
  EXPECT_DOUBLE_EQ(find("scale_value").number, 8.0);  // sqrt(512 / 8)
  EXPECT_TRUE(find("scale_value").accepts("8"));
  EXPECT_FALSE(find("scale_value").accepts("22.6"));  // sqrt(512): the mistake itself
  EXPECT_NEAR(find("large_logits").number, 0.7311, 1e-4);  // softmax([1000, 999])[0]
  EXPECT_TRUE(find("large_logits").accepts("0.73"));
  EXPECT_FALSE(find("large_logits").accepts("0.5"));
  EXPECT_EQ(find("qkv_parameters").number, 3 * 512 * 512 + 3 * 512);
  EXPECT_FALSE(find("qkv_parameters").accepts("786000"));  // whole numbers exactly
}

// A number may be typed as the expression that gives it (issue 50: 1/0.8 was
// refused against 1.25): a table of what is typed, for which answer, and
// whether it is right.
TEST(Questions, NumbersTypedAsExpressions) {
  struct Row {
    double number;
    const char* typed;
    bool right;
  };
  const std::vector<Row> table = {
      {1.25, "1/0.8", true},          {1.25, "5/4", true},          {1.25, "1.25", true},
      {1.25, "1.249", true},          {1.25, " 1 / (1 - 0.2) ", true}, {1.25, "0.8", false},
      {1.25, "1/0.7", false},         {8, "sqrt(64)", true},        {8, "512/64", true},
      {8, "2^3", true},               {8, "0.1*80", true},          {8, "8.01", false},
      {0.125, "2^-3", true},          {0.3536, "1/sqrt(8)", true},  {-2, "-2", true},
      {-2, "-(1+1)", true},           {1e-5, "1e-5", true},         {8, "sqrt(-64)", false},
      {8, "sqrt 64", false},          {8, "eight", false},          {8, "1/0", false},
      {8, "", false},
  };
  for (const auto& row : table) {
    Question q;
    q.kind = Question::Kind::number;
    q.number = row.number;
    EXPECT_EQ(q.accepts(row.typed), row.right) << "'" << row.typed << "' for " << row.number;
  }
}

TEST(Questions, MalformedBanksAreRefusedWithTheQuestionNamed) {
  auto exercise = load_exercise(root() / "exercises" / "exercise_sdpa");
  auto dir = fs::temp_directory_path() / ("questions_test_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  exercise.dir = dir;
  const std::vector<std::pair<std::string, std::string>> bad = {
      {"two_right", "[{id: q, focus_point: scaling, ask: x, explain: y, choices: [a, b, a], answer: a}]"},
      {"letter_out", "[{id: q, focus_point: scaling, ask: x, explain: y, choices: [a, b, c], answer: d}]"},
      {"two_kinds", "[{id: q, focus_point: scaling, ask: x, explain: y, choices: [a, b, c], answer: a, "
                    "number: {expression: '2'}}]"},
      {"no_kind", "[{id: q, focus_point: scaling, ask: x, explain: y}]"},
      {"unknown_point", "[{id: q, focus_point: nope, ask: x, explain: y, number: {expression: '2'}}]"},
      {"line_out", "[{id: q, focus_point: scaling, ask: x, explain: y, listing: \"a\\nb\\nc\\n\", line: 4}]"},
      {"bad_dim", "[{id: q, focus_point: scaling, ask: x, explain: y, shape: {expressions: [B, Q]}, }]"},
  };
  for (const auto& [name, text] : bad) {
    fs::create_directories(dir / ".grader");
    std::ofstream(dir / kQuestionsFile) << "questions: " << text << "\n";
    try {
      load_questions(exercise);
      ADD_FAILURE() << name << " was accepted";
    } catch (const ConfigError& error) {
      EXPECT_NE(std::string(error.what()).find("questions.yaml"), std::string::npos) << name << ": " << error.what();
    }
  }
  fs::remove_all(dir);
}

GradeReport report_with(const Exercise& exercise, const std::set<std::string>& missed) {
  GradeReport report;
  for (const auto& point : exercise.focus_points) {
    report.focus_points.push_back({point, missed.count(point.id) ? FocusStatus::missed : FocusStatus::met, {}, {}});
  }
  return report;
}

TEST(Questions, FollowUpsStartWithWhatTheGradeMissed) {
  auto mhsa = load_exercise(root() / "exercises" / "exercise_mhsa");
  auto bank = load_questions(mhsa);
  for (uint64_t seed : {1u, 2u, 3u}) {
    auto chosen = select_follow_ups(bank, report_with(mhsa, {"scaling", "softmax"}), seed);
    ASSERT_EQ(chosen.size(), 6u);
    std::vector<std::string> points;
    for (const auto* q : chosen) points.push_back(q->focus_point);
    EXPECT_EQ(std::vector<std::string>(points.begin(), points.begin() + 4),
              (std::vector<std::string>{"scaling", "scaling", "softmax", "softmax"}));
    EXPECT_NE(chosen[0]->id, chosen[1]->id);
    for (size_t i = 4; i < 6; ++i) EXPECT_TRUE(points[i] != "scaling" && points[i] != "softmax");
  }
  // Nothing measured (a compile error): a sample of every focus point.
  GradeReport stopped;
  for (const auto& point : mhsa.focus_points) stopped.focus_points.push_back({point, FocusStatus::not_assessed, {}, {}});
  EXPECT_EQ(select_follow_ups(bank, stopped, 7).size(), 4u);
}

TEST(Questions, InterviewsAreAppendedAndKept) {
  auto file = fs::temp_directory_path() / ("interviews_" + std::to_string(::getpid()) + ".json");
  fs::remove(file);
  InterviewRecord record;
  record.exercise = "exercise_mhsa";
  record.started = "2026-11-23T04:00:00Z";
  record.minutes = 30;
  record.seconds_used = 754;
  record.verdict = "failed";
  record.missed = {"scaling"};
  record.met = {"softmax"};
  record.answers = {{"scale_value", "scaling", true, false}, {"softmax_axis", "softmax", true, true}};
  // Eight writers at once: none lost (the update is under the file's lock).
  std::vector<std::thread> writers;
  for (int i = 0; i < 8; ++i) writers.emplace_back([&] { record_interview(file, record); });
  for (auto& w : writers) w.join();
  auto progress = load_progress(file);
  ASSERT_EQ(progress.interviews.size(), 8u);
  const auto& back = progress.interviews.front();
  EXPECT_EQ(back.exercise, "exercise_mhsa");
  EXPECT_EQ(back.missed, std::vector<std::string>{"scaling"});
  ASSERT_EQ(back.answers.size(), 2u);
  EXPECT_FALSE(back.answers[0].right);
  EXPECT_TRUE(back.answers[1].right);
  EXPECT_DOUBLE_EQ(back.seconds_used, 754);
  fs::remove(file);
  fs::remove(file.string() + ".lock");
}

}  // namespace
}  // namespace grader
