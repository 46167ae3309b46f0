// exercise.yaml loading: every real exercise loads, and malformed ones are
// refused with a message that names the file and the problem.
#include "exercise/exercise.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <regex>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <set>
#include <sstream>

#include "checks/check.h"
#include "base/errors.h"
#include "project_root.h"

namespace grader {
namespace {
namespace fs = std::filesystem;

using test_support::project_root;

// `grade hint` has something to say on every focus point before the
// explanation, and the learning order (`order:`) is a real order.
TEST(Exercises, EveryFocusPointHasHintsAndAPlaceInTheOrder) {
  std::set<int> orders;
  for (const auto& id : list_exercises(project_root() / "exercises")) {
    auto exercise = load_exercise(project_root() / "exercises" / id);
    EXPECT_TRUE(orders.insert(exercise.order).second) << id << ": another exercise has order " << exercise.order;
    EXPECT_LT(exercise.order, 1000) << id << " has no `order:`";
    EXPECT_FALSE(exercise.difficulty.empty()) << id << " has no `difficulty:` (grade list)";
    EXPECT_GT(exercise.minutes, 0) << id << " has no `minutes:` (grade list)";
    for (const auto& point : exercise.focus_points) {
      EXPECT_FALSE(point.hints.empty()) << id << ": focus point " << point.id << " has no hints";
      for (const auto& text : point.hints) EXPECT_NE(text, point.explanation) << id << ": " << point.id;
    }
  }
}

// A hint's code is the last level's (the explanation): the hints before it
// ask and nudge in words, never with a line of code that can be pasted as the
// answer: code in backticks, a call through a member or namespace, a call with
// a literal argument, or an assignment of a call.
TEST(Exercises, HintsShowNoCodeBeforeTheLastLevel) {
  const std::vector<std::regex> code = {
      std::regex("`[^`]*[(=:.][^`]*`"), std::regex("[A-Za-z_]\\w*(\\.|->|::)[A-Za-z_]\\w*\\s*\\("),
      std::regex("[A-Za-z_]\\w*\\([^)]*[-{]?\\d"), std::regex("\\w+\\s*=\\s*[A-Za-z_]\\w*\\(")};
  for (const auto& id : list_exercises(project_root() / "exercises")) {
    auto exercise = load_exercise(project_root() / "exercises" / id);
    for (const auto& point : exercise.focus_points) {
      for (size_t level = 0; level < point.hints.size(); ++level) {
        const bool shows = std::any_of(code.begin(), code.end(),
                                       [&](const std::regex& rule) { return std::regex_search(point.hints[level], rule); });
        EXPECT_FALSE(shows)
            << id << ": hint " << level + 1 << " of " << point.id << " shows code: " << point.hints[level];
      }
    }
  }
}

// README.md's exercise table lists every exercise, in the learning order
// `grade list` shows, with the learner file the exercise declares.
TEST(Exercises, ReadmeTableMatchesTheLearningOrder) {
  std::vector<std::pair<int, std::string>> ordered;
  for (const auto& id : list_exercises(project_root() / "exercises")) {
    ordered.emplace_back(load_exercise(project_root() / "exercises" / id).order, id);
  }
  std::sort(ordered.begin(), ordered.end());
  std::ifstream readme(project_root() / "README.md");
  ASSERT_TRUE(readme) << "README.md not found";
  std::vector<std::string> rows;
  for (std::string line; std::getline(readme, line);) {
    if (line.rfind("| `exercise_", 0) == 0) rows.push_back(line);
  }
  ASSERT_EQ(rows.size(), ordered.size()) << "README's exercise table and exercises/ differ in length";
  for (size_t i = 0; i < rows.size(); ++i) {
    const auto& id = ordered[i].second;
    EXPECT_EQ(rows[i].rfind("| `" + id + "` |", 0), 0u) << "row " << i + 1 << " of README's table should be " << id
                                                        << " (learning order), is: " << rows[i].substr(0, 60);
    auto exercise = load_exercise(project_root() / "exercises" / id);
    EXPECT_NE(rows[i].find("exercises/" + id + "/" + exercise.learner_files.front()), std::string::npos)
        << id << ": README's row does not name its learner file";
  }
}

// `grade reset` restores exercises/<id>/.starter/<file>. In this repository
// the learner files are the starters, so the two must be the same bytes: a
// starter changed in one place only would come back old after a reset.
TEST(Exercises, ResetRestoresTheCurrentStarter) {
  auto read = [](const fs::path& file) {
    std::ifstream in(file, std::ios::binary);
    return std::string((std::istreambuf_iterator<char>(in)), {});
  };
  for (const auto& id : list_exercises(project_root() / "exercises")) {
    auto exercise = load_exercise(project_root() / "exercises" / id);
    for (const auto& name : exercise.learner_files) {
      auto pristine = exercise.dir / ".starter" / name;
      ASSERT_TRUE(fs::exists(pristine)) << pristine << " is missing";
      EXPECT_EQ(read(exercise.dir / name), read(pristine))
          << id << ": " << name << " and .starter/" << name << " differ; update both";
    }
  }
}

TEST(Exercises, BlankStarterDropsTheCommentsAfterTheHeading) {
  struct Row {
    std::string guided, blank;
  };
  const Row rows[] = {
      {"// heading\n#include \"x.h\"\n\nint f() {\n  // 1. step\n  return 0;  // keep\n}\n",
       "// heading\n#include \"x.h\"\n\nint f() {\n  return 0;  // keep\n}\n"},
      // A class and a member function's body; a comment after code stays.
      {"struct A {\n  // members\n  int x;\n};\nvoid g() {\n  auto s = \"{\";  // }\n  // step\n}\n// after\n",
       "struct A {\n  int x;\n};\nvoid g() {\n  auto s = \"{\";  // }\n}\n"},
      // Steps between the includes and the functions go too; the opening heading stays.
      {"// h1\n// h2\n#include <x>\n\n// 1. step\nvoid k() {}\n", "// h1\n// h2\n#include <x>\n\nvoid k() {}\n"},
      {"void h()\n{\n    // indented step\n\tTORCH_CHECK(false, \"'}'\");\n}", "void h()\n{\n\tTORCH_CHECK(false, \"'}'\");\n}"},
      {"", ""},
  };
  for (const auto& row : rows) {
    SCOPED_TRACE(row.guided);
    EXPECT_EQ(blank_starter(row.guided), row.blank);
  }
}

// Calls `each(exercise, name, guided)` for every learner file of every
// exercise, with its guided starter's text.
void for_each_starter(const std::function<void(const Exercise&, const std::string&, const std::string&)>& each) {
  for (const auto& id : list_exercises(project_root() / "exercises")) {
    const auto exercise = load_exercise(project_root() / "exercises" / id);
    for (const auto& name : exercise.learner_files) {
      std::ifstream in(exercise.dir / ".starter" / name, std::ios::binary);
      each(exercise, name, std::string((std::istreambuf_iterator<char>(in)), {}));
    }
  }
}

// Every exercise's blank starter: its code lines all kept, no comment left in
// a body, and graded untouched it is a starter ("not started"), as the guided one is.
TEST(Exercises, EveryBlankStarterKeepsTheCodeAndCountsAsAStarter) {
  for_each_starter([](const Exercise& exercise, const std::string& name, const std::string& guided) {
      const auto& id = exercise.id;
      const auto blank = blank_starter(guided);
      EXPECT_LT(blank.size(), guided.size()) << id << ": the guided starter has no steps to drop";
      auto code_lines = [](const std::string& text) {
        std::vector<std::string> kept;
        std::istringstream lines(text);
        for (std::string line; std::getline(lines, line);) {
          const auto first = line.find_first_not_of(" \t");
          if (first != std::string::npos && line.compare(first, 2, "//") != 0) kept.push_back(line);
        }
        return kept;
      };
      EXPECT_EQ(code_lines(blank), code_lines(guided)) << id;
      EXPECT_TRUE(is_starter(exercise, name, blank)) << id;
      EXPECT_TRUE(is_starter(exercise, name, guided)) << id;
  });
}

// An interview's copy of every starter names itself and the command that
// grades it, never the learner's own file; it still counts as a starter
// there (and only there); kept, it names the learner's file again (issue 50).
TEST(Exercises, InterviewCopiesNameThemselves) {
  for_each_starter([](const Exercise& exercise, const std::string& name, const std::string& guided) {
      const auto& id = exercise.id;
      const auto blank = blank_starter(guided);
      const auto attempt = fs::path("/home/learner/.learner/interviews") / (id + "-2026-11-29-101500") / name;
      const auto copy = interview_starter(exercise, blank, attempt);
      EXPECT_NE(copy.find("./grade " + id + " --submission " + attempt.string()), std::string::npos) << id;
      EXPECT_EQ(copy.find("exercises/" + id + "/" + name), std::string::npos) << id << ":\n" << copy;
      EXPECT_EQ(copy.find("Read README.md in this folder"), std::string::npos) << id;
      EXPECT_TRUE(is_starter(exercise, name, copy, attempt)) << id;
      EXPECT_FALSE(is_starter(exercise, name, copy)) << id;
      EXPECT_FALSE(is_starter(exercise, name, copy, attempt.parent_path() / "other" / name)) << id;
      EXPECT_EQ(own_from_interview(exercise, copy, attempt), blank) << id;
  });
}

class BrokenExercise : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("grader-test-" + std::to_string(::getpid())) / "exercise_x";
    fs::create_directories(dir_);
    std::ofstream(dir_ / "x.cpp") << "";
    std::ofstream(dir_ / "x.h") << "";
  }
  void TearDown() override { fs::remove_all(dir_.parent_path()); }

  std::string load_error(const std::string& yaml) {
    std::ofstream(dir_ / "exercise.yaml") << yaml;
    try {
      load_exercise(dir_);
    } catch (const ConfigError& error) {
      return error.what();
    }
    return "";
  }

  static std::string valid() {
    return "id: exercise_x\ntitle: X\nlearner_files: [x.cpp]\ninterface: x.h\n"
           "tolerances: {float32: {rtol: 1e-4, atol: 1e-5}, float64: {rtol: 1e-7, atol: 1e-9}}\n"
           "focus_points:\n  - {id: a, title: A, explanation: why}\n"
           "checks:\n  - {id: c, focus_point: a, title: C}\n";
  }

  fs::path dir_;
};

TEST(Exercises, EveryExerciseLoadsAndMatchesItsCheckCode) {
  auto ids = list_exercises(project_root() / "exercises");
  ASSERT_GE(ids.size(), 2u);
  for (const auto& id : ids) {
    auto exercise = load_exercise(project_root() / "exercises" / id);
    EXPECT_EQ(exercise.id, id);
    EXPECT_NO_THROW(make_suite(exercise)) << id;
  }
}

// A module (an exercise whose signature loads parameters) declares its parts,
// so that an unexplained difference is placed by the isolation twins.
TEST(Exercises, EveryModuleExerciseDeclaresItsParts) {
  for (const auto& id : list_exercises(project_root() / "exercises")) {
    auto exercise = load_exercise(project_root() / "exercises" / id);
    if (exercise.signature.parameters.empty()) continue;
    EXPECT_FALSE(exercise.isolation.parts.empty()) << id << ": exercise.yaml has no isolate: section";
  }
}

TEST(Exercises, UnknownIdSuggestsTheClosest) {
  try {
    find_exercise_dir(project_root() / "exercises", "exercise_mhsq");
    FAIL() << "expected UsageError";
  } catch (const UsageError& error) {
    EXPECT_NE(std::string(error.what()).find("did you mean 'exercise_mhsa'"), std::string::npos);
  }
}

TEST_F(BrokenExercise, ValidFileLoads) { EXPECT_EQ(load_error(valid()), ""); }

// A check's share of the score: a positive number, 1 when not given.
TEST_F(BrokenExercise, CheckWeights) {
  auto with_weight = [](const std::string& weight) {
    auto yaml = valid();
    return yaml.replace(yaml.find("title: C}"), 9, "title: C, weight: " + weight + "}");
  };
  EXPECT_EQ(load_error(with_weight("2.5")), "");
  EXPECT_DOUBLE_EQ(load_exercise(dir_).check("c").weight, 2.5);
  EXPECT_EQ(load_error(valid()), "");
  EXPECT_DOUBLE_EQ(load_exercise(dir_).check("c").weight, 1);
  for (const char* bad : {"0", "-1", "heavy", ".nan"}) {
    EXPECT_NE(load_error(with_weight(bad)).find("weight must be a positive number"), std::string::npos) << bad;
  }
}

// `difficulty:` and `minutes:` (grade list): optional, and only sensible values.
TEST_F(BrokenExercise, DifficultyAndMinutes) {
  auto with = [](const std::string& lines) {
    auto yaml = valid();
    return yaml.replace(yaml.find("title: X\n"), 9, "title: X\n" + lines);
  };
  EXPECT_EQ(load_error(with("difficulty: hard\nminutes: 45\n")), "");
  EXPECT_EQ(load_exercise(dir_).difficulty, "hard");
  EXPECT_EQ(load_exercise(dir_).minutes, 45);
  EXPECT_EQ(load_error(valid()), "");
  EXPECT_EQ(load_exercise(dir_).difficulty, "");
  EXPECT_EQ(load_exercise(dir_).minutes, 0);
  for (const char* bad : {"difficulty: tricky\n", "difficulty: [easy]\n"}) {
    EXPECT_NE(load_error(with(bad)).find("'difficulty'"), std::string::npos) << bad;
  }
  for (const char* bad : {"minutes: 0\n", "minutes: -5\n", "minutes: 241\n", "minutes: soon\n", "minutes: 2.5\n"}) {
    EXPECT_NE(load_error(with(bad)).find("'minutes' must be a whole number"), std::string::npos) << bad;
  }
}

// A grade of the starter as given is not an attempt (grade list: not started).
TEST(Exercises, StarterIsRecognisedByteForByte) {
  auto exercise = load_exercise(project_root() / "exercises" / "exercise_sdpa");
  const auto& name = exercise.learner_files.front();
  std::ifstream in(exercise.dir / ".starter" / name, std::ios::binary);
  std::stringstream starter;
  starter << in.rdbuf();
  ASSERT_FALSE(starter.str().empty());
  EXPECT_TRUE(is_starter(exercise, name, starter.str()));
  EXPECT_FALSE(is_starter(exercise, name, starter.str() + "\n"));
  EXPECT_FALSE(is_starter(exercise, name, ""));
  EXPECT_FALSE(is_starter(exercise, "other.cpp", starter.str()));
}

TEST_F(BrokenExercise, NotYaml) { EXPECT_NE(load_error("id: [unclosed").find("not valid YAML"), std::string::npos); }

TEST_F(BrokenExercise, MissingTitle) {
  auto yaml = valid();
  yaml.replace(yaml.find("title: X\n"), 9, "");
  EXPECT_NE(load_error(yaml).find("'title'"), std::string::npos);
}

TEST_F(BrokenExercise, CheckNamesUnknownFocusPoint) {
  auto yaml = valid();
  yaml.replace(yaml.find("focus_point: a"), 14, "focus_point: b");
  EXPECT_NE(load_error(yaml).find("unknown focus point 'b'"), std::string::npos);
}

TEST_F(BrokenExercise, LearnerFileMissing) {
  auto yaml = valid();
  yaml.replace(yaml.find("[x.cpp]"), 7, "[y.cpp]");
  EXPECT_NE(load_error(yaml).find("learner file 'y.cpp' does not exist"), std::string::npos);
}

TEST_F(BrokenExercise, IdDiffersFromFolder) {
  auto yaml = valid();
  yaml.replace(0, 14, "id: exercise_y");
  EXPECT_NE(load_error(yaml).find("differs from its folder"), std::string::npos);
}

TEST_F(BrokenExercise, ToleranceMissing) {
  auto yaml = valid();
  const std::string float64 = ", float64: {rtol: 1e-7, atol: 1e-9}";
  yaml.replace(yaml.find(float64), float64.size(), "");
  EXPECT_NE(load_error(yaml).find("float64"), std::string::npos);
}

TEST_F(BrokenExercise, MessageNamesTheFile) {
  EXPECT_NE(load_error("id: [unclosed").find("exercise.yaml"), std::string::npos);
}

}  // namespace
}  // namespace grader

namespace grader {
namespace {

class ExerciseLimits : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("grader-limits-" + std::to_string(::getpid())) / "exercise_x";
    fs::create_directories(dir_);
    std::ofstream(dir_ / "x.cpp") << "";
    std::ofstream(dir_ / "x.h") << "";
  }
  void TearDown() override { fs::remove_all(dir_.parent_path()); }

  Exercise load(const std::string& limits) {
    std::ofstream(dir_ / "exercise.yaml")
        << "id: exercise_x\ntitle: X\nlearner_files: [x.cpp]\ninterface: x.h\n"
        << limits
        << "tolerances: {float32: {rtol: 1e-4, atol: 1e-5}, float64: {rtol: 1e-7, atol: 1e-9}}\n"
           "focus_points:\n  - {id: a, title: A, explanation: why}\n"
           "checks:\n  - {id: c, focus_point: a, title: C}\n";
    return load_exercise(dir_);
  }
  std::string error(const std::string& limits) {
    try {
      load(limits);
    } catch (const ConfigError& error) {
      return error.what();
    }
    return "";
  }
  fs::path dir_;
};

TEST_F(ExerciseLimits, DefaultsWhenAbsent) {
  auto exercise = load("");
  EXPECT_GT(exercise.limits.run.seconds, 0);
  EXPECT_GT(exercise.limits.run.memory_mb, 0);
  EXPECT_GT(exercise.limits.compile.processes, 0);
}

TEST_F(ExerciseLimits, ReadsEachStepAndCpuFollowsWallUnlessGiven) {
  auto exercise = load(
      "limits:\n  run: {seconds: 7, memory_mb: 300, processes: 9, output_kb: 5}\n"
      "  compile: {seconds: 50, cpu_seconds: 40}\n");
  EXPECT_EQ(exercise.limits.run.seconds, 7);
  EXPECT_EQ(exercise.limits.run.cpu_seconds, 7);
  EXPECT_EQ(exercise.limits.run.memory_mb, 300);
  EXPECT_EQ(exercise.limits.run.processes, 9);
  EXPECT_EQ(exercise.limits.run.output_kb, 5);
  EXPECT_EQ(exercise.limits.compile.seconds, 50);
  EXPECT_EQ(exercise.limits.compile.cpu_seconds, 40);
}

TEST_F(ExerciseLimits, UnknownKeysAndBadValuesAreRefused) {
  EXPECT_NE(error("limits:\n  run: {secs: 7}\n").find("unknown 'secs'"), std::string::npos);
  EXPECT_NE(error("limits:\n  link: {seconds: 7}\n").find("only compile and run"), std::string::npos);
  EXPECT_NE(error("limits:\n  run: {seconds: -1}\n").find("must be positive"), std::string::npos);
  EXPECT_NE(error("limits:\n  run: {memory_mb: 10}\n").find("memory_mb at least 64"), std::string::npos);
}

}  // namespace
}  // namespace grader
