// Grading a class: shards that split a batch exactly (from --shard or an
// engine's variables), the items a class folder holds, and the merge that
// refuses to call a gradebook complete when a shard or a result is missing.
#include "teacher/classroom.h"

#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>

#include "base/errors.h"
#include "report/formats.h"

namespace grader {
namespace {
namespace fs = std::filesystem;

EnvLookup env_of(std::map<std::string, std::string> vars) {
  return [vars](const std::string& name) -> std::optional<std::string> {
    auto found = vars.find(name);
    if (found == vars.end()) return std::nullopt;
    return found->second;
  };
}

std::string usage_error(const std::function<void()>& run) {
  try {
    run();
  } catch (const UsageError& error) {
    return error.what();
  }
  return "";
}

TEST(Shards, ExplicitIsOneBased) {
  auto shard = parse_shard("2/4", env_of({}));
  EXPECT_EQ(shard.index, 1u);
  EXPECT_EQ(shard.count, 4u);
  EXPECT_EQ(shard.describe(), "2/4");
  EXPECT_NE(usage_error([] { parse_shard("0/4", env_of({})); }).find("numbered from 1"), std::string::npos);
  EXPECT_NE(usage_error([] { parse_shard("5/4", env_of({})); }).find("does not exist"), std::string::npos);
  EXPECT_NE(usage_error([] { parse_shard("1/0", env_of({})); }).find("at least 1"), std::string::npos);
  for (const char* bad : {"3", "a/b", "1/", "/4", "-1/4", "1/4/2", " 1/4", "1/99999999999"}) {
    EXPECT_NE(usage_error([&] { parse_shard(bad, env_of({})); }).find("expected i/n"), std::string::npos) << bad;
  }
}

TEST(Shards, FromSlurmArrays) {
  // --array=1-4: task 3 is the third shard of four.
  auto shard = parse_shard("auto", env_of({{"SLURM_ARRAY_TASK_ID", "3"},
                                           {"SLURM_ARRAY_TASK_MIN", "1"},
                                           {"SLURM_ARRAY_TASK_STEP", "1"},
                                           {"SLURM_ARRAY_TASK_COUNT", "4"}}));
  EXPECT_EQ(shard.describe(), "3/4");
  EXPECT_EQ(shard.source, "SLURM_ARRAY_TASK_ID");
  // --array=0-6:2 (tasks 0 2 4 6): task 4 is the third.
  shard = parse_shard("auto", env_of({{"SLURM_ARRAY_TASK_ID", "4"},
                                      {"SLURM_ARRAY_TASK_MIN", "0"},
                                      {"SLURM_ARRAY_TASK_STEP", "2"},
                                      {"SLURM_ARRAY_TASK_COUNT", "4"}}));
  EXPECT_EQ(shard.describe(), "3/4");
  EXPECT_NE(usage_error([] {
              parse_shard("auto", env_of({{"SLURM_ARRAY_TASK_ID", "3"},
                                          {"SLURM_ARRAY_TASK_MIN", "0"},
                                          {"SLURM_ARRAY_TASK_STEP", "2"},
                                          {"SLURM_ARRAY_TASK_COUNT", "4"}}));
            }).find("not a range"),
            std::string::npos);
  EXPECT_NE(usage_error([] {
              parse_shard("auto", env_of({{"SLURM_ARRAY_TASK_ID", "3"}}));
            }).find("SLURM_ARRAY_TASK_COUNT is not set"),
            std::string::npos);
}

TEST(Shards, FromKubernetesAndGitLab) {
  auto shard = parse_shard("auto", env_of({{"JOB_COMPLETION_INDEX", "0"}, {"GRADE_SHARD_COUNT", "3"}}));
  EXPECT_EQ(shard.describe(), "1/3");
  EXPECT_NE(usage_error([] {
              parse_shard("auto", env_of({{"JOB_COMPLETION_INDEX", "0"}}));
            }).find("GRADE_SHARD_COUNT"),
            std::string::npos);
  shard = parse_shard("auto", env_of({{"CI_NODE_INDEX", "2"}, {"CI_NODE_TOTAL", "2"}}));
  EXPECT_EQ(shard.describe(), "2/2");
  EXPECT_NE(usage_error([] {
              parse_shard("auto", env_of({{"CI_NODE_INDEX", "3"}, {"CI_NODE_TOTAL", "2"}}));
            }).find("does not exist"),
            std::string::npos);
  EXPECT_NE(usage_error([] { parse_shard("auto", env_of({})); }).find("no engine's index variables"),
            std::string::npos);
}

// Every item in exactly one shard, the shards within one item of each other.
TEST(Shards, SplitExactly) {
  std::vector<int> items(23);
  for (int i = 0; i < 23; ++i) items[i] = i;
  for (size_t count : {1u, 2u, 4u, 7u, 23u, 30u}) {
    std::multiset<int> seen;
    size_t smallest = items.size(), largest = 0;
    for (size_t index = 0; index < count; ++index) {
      auto mine = shard_of(items, Shard{index, count});
      seen.insert(mine.begin(), mine.end());
      smallest = std::min(smallest, mine.size());
      largest = std::max(largest, mine.size());
    }
    EXPECT_EQ(seen, std::multiset<int>(items.begin(), items.end())) << count;
    EXPECT_LE(largest - smallest, 1u) << count;
  }
}

class ClassFolder : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("classroom_test_" + std::to_string(::getpid()) + "_" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    for (const auto& [id, file] : {std::pair{"exercise_sdpa", "sdpa.cpp"}, std::pair{"exercise_mhsa", "mhsa.cpp"}}) {
      Exercise exercise;
      exercise.id = id;
      exercise.learner_files = {file};
      exercise.checks.resize(4);
      exercises_.push_back(exercise);
    }
  }
  void TearDown() override { fs::remove_all(dir_); }
  void touch(const fs::path& file) {
    fs::create_directories(file.parent_path());
    std::ofstream(file) << "// code\n";
  }
  fs::path dir_;
  std::vector<Exercise> exercises_;
};

TEST_F(ClassFolder, ItemsPerStudentAndExercise) {
  auto klass = dir_ / "class";
  touch(klass / "bob" / "sdpa.cpp");
  touch(klass / "alice" / "exercises" / "exercise_mhsa" / "mhsa.cpp");  // a clone of the learner repository
  touch(klass / "alice" / "sdpa.cpp");
  fs::create_directories(klass / "carol");
  fs::create_directories(klass / ".git");  // hidden: no student
  touch(klass / "notes.txt");              // a file: no student
  auto items = class_items(klass, exercises_);
  ASSERT_EQ(items.size(), 6u);
  std::vector<std::string> order;
  for (const auto& item : items) order.push_back(item.student + " " + item.exercise);
  EXPECT_EQ(order, (std::vector<std::string>{"alice exercise_mhsa", "alice exercise_sdpa", "bob exercise_mhsa",
                                             "bob exercise_sdpa", "carol exercise_mhsa", "carol exercise_sdpa"}));
  EXPECT_EQ(items[0].submission, klass / "alice" / "exercises" / "exercise_mhsa" / "mhsa.cpp");
  EXPECT_EQ(items[1].submission, klass / "alice" / "sdpa.cpp");
  EXPECT_TRUE(items[2].submission.empty());
  EXPECT_TRUE(items[4].submission.empty() && items[5].submission.empty());

  // A student folder that is a link is that student's invalid_submission, never the class's error.
  fs::create_directory_symlink(klass / "bob", klass / "mallory");
  items = class_items(klass, exercises_);
  ASSERT_EQ(items.size(), 8u);
  for (const auto& item : items) {
    if (item.student != "mallory") continue;
    EXPECT_TRUE(item.submission.empty());
    EXPECT_NE(item.invalid.find("symbolic link"), std::string::npos) << item.invalid;
  }
  // A link to a file, a link to itself, and a name that is not text: each
  // that student's row with the reason, never an error of the class.
  fs::remove(klass / "mallory");
  fs::create_symlink(klass / "bob" / "sdpa.cpp", klass / "tofile");
  fs::create_symlink(klass / "loop", klass / "loop");
  fs::create_directories(klass / "Jos\xe9");
  items = class_items(klass, exercises_);
  std::map<std::string, std::string> why;
  for (const auto& item : items) why[item.student] = item.invalid;
  EXPECT_NE(why["tofile"].find("symbolic link"), std::string::npos) << why["tofile"];
  EXPECT_NE(why["loop"].find("symbolic link"), std::string::npos) << why["loop"];
  EXPECT_NE(why["Jos\\xe9"].find("not plain text"), std::string::npos);
  EXPECT_EQ(items.size(), 6u * 2u);
  EXPECT_NE(usage_error([&] { class_items(dir_ / "nowhere", exercises_); }).find("not a folder"), std::string::npos);
}

TEST_F(ClassFolder, BatchStudentsAreStems) {
  auto items = batch_items({dir_ / "b" / "zoe.cpp", dir_ / "a" / "amy.cpp"}, "exercise_sdpa");
  ASSERT_EQ(items.size(), 2u);
  EXPECT_EQ(items[0].student, "amy");
  EXPECT_NE(usage_error([&] {
              batch_items({dir_ / "a" / "x.cpp", dir_ / "b" / "x.cpp"}, "exercise_sdpa");
            }).find("would both be student 'x'"),
            std::string::npos);
}

// Writes what `grade class --results` writes for one shard.
void write_shard(const fs::path& results, const Shard& shard, const std::vector<ClassItem>& all,
                 const std::map<std::string, std::string>& verdicts, bool with_manifest = true) {
  std::vector<ClassItem> mine = shard_of(all, shard);
  std::vector<std::string> said;
  for (const auto& item : mine) {
    auto key = item.student + " " + item.exercise;
    auto verdict = verdicts.count(key) ? verdicts.at(key) : "passed";
    nlohmann::ordered_json report = {{"exercise", item.exercise},
                                     {"verdict", verdict},
                                     {"summary", verdict == "passed" ? "all good" : "scale, wrong"},
                                     {"seed", 42},
                                     {"focus_points",
                                      {{{"id", "scaling"}, {"status", verdict == "passed" ? "met" : "missed"}},
                                       {{"id", "masking"}, {"status", "met"}}}},
                                     {"score", verdict == "passed" ? 4.0 : 1.5},
                                     {"max_score", 4.0}};
    fs::create_directories(result_file(results, item).parent_path());
    write_report_file(result_file(results, item), item_result(item, report.dump()));
    said.push_back(verdict);
  }
  if (!with_manifest) return;
  fs::create_directories(manifest_file(results, shard).parent_path());
  write_report_file(manifest_file(results, shard),
                    shard_manifest(shard, all, mine, said, {{"exercise_mhsa", 4}, {"exercise_sdpa", 4}}));
}

std::vector<ClassItem> two_by_two() {
  return {{"=cmd|calc", "exercise_mhsa", "f", {}, {}},
          {"=cmd|calc", "exercise_sdpa", "f", {}, {}},
          {"ann, \"the\" 2nd", "exercise_mhsa", "f", {}, {}},
          {"ann, \"the\" 2nd", "exercise_sdpa", "f", {}, {}}};
}

TEST_F(ClassFolder, MergeShardsIntoOneGradebook) {
  auto all = two_by_two();
  // Two machines, two results folders; shard 2 graded twice (a retry rewrites).
  for (size_t index : {0u, 1u, 1u}) {
    write_shard(dir_ / ("results" + std::to_string(index)), Shard{index, 2}, all,
                {{"ann, \"the\" 2nd exercise_sdpa", "failed"}});
  }
  auto book = merge_results({dir_ / "results0", dir_ / "results1"});
  EXPECT_TRUE(book.problems.empty()) << book.problems.front();
  EXPECT_EQ(book.exercises, (std::vector<std::string>{"exercise_mhsa", "exercise_sdpa"}));
  auto csv = gradebook_csv(book);
  EXPECT_EQ(csv,
            "student,score,max_score,exercise_mhsa score,exercise_mhsa verdict,exercise_mhsa missed focus "
            "points,exercise_sdpa score,exercise_sdpa verdict,exercise_sdpa missed focus points,warnings\r\n"
            "=cmd|calc,8,8,4,passed,,4,passed,,\r\n"
            "\"ann, \"\"the\"\" 2nd\",5.5,8,4,passed,,1.5,failed,scaling,\r\n");
  auto student = nlohmann::json::parse(student_json(book, "ann, \"the\" 2nd"));
  EXPECT_EQ(student["complete"], true);
  EXPECT_DOUBLE_EQ(student["score"].get<double>(), 5.5);
  EXPECT_EQ(student["exercises"]["exercise_sdpa"]["missed_focus_points"][0], "scaling");
  EXPECT_EQ(student["exercises"]["exercise_sdpa"]["seed"], 42);
}

// A grade not assessed where it ran (a CUDA exercise on a machine without a
// GPU) is outside the student's total: no score and no maximum, and the row
// stays complete.
TEST_F(ClassFolder, NotAssessedIsOutsideTheTotal) {
  auto all = two_by_two();
  auto results = dir_ / "results";
  for (size_t index : {0u, 1u}) {
    write_shard(results, Shard{index, 2}, all, {{"ann, \"the\" 2nd exercise_sdpa", "not_assessed"}});
  }
  auto book = merge_results({results});
  EXPECT_TRUE(book.problems.empty()) << book.problems.front();
  EXPECT_NE(gradebook_csv(book).find("\"ann, \"\"the\"\" 2nd\",4,4,4,passed,,,not_assessed,"), std::string::npos)
      << gradebook_csv(book);
  auto student = nlohmann::json::parse(student_json(book, "ann, \"the\" 2nd"));
  EXPECT_EQ(student["complete"], true);
  EXPECT_DOUBLE_EQ(student["score"].get<double>(), 4);
  EXPECT_DOUBLE_EQ(student["max_score"].get<double>(), 4);
  EXPECT_FALSE(student["exercises"]["exercise_sdpa"].contains("score"));
}

TEST_F(ClassFolder, MergeSaysWhatIsMissing) {
  auto all = two_by_two();
  auto results = dir_ / "results";
  write_shard(results, Shard{0, 2}, all, {});
  auto book = merge_results({results});
  ASSERT_EQ(book.problems.size(), 1u);
  EXPECT_NE(book.problems[0].find("shard 2/2 has not finished"), std::string::npos);
  // The lost shard's students have no total: an incomplete row is never scored as if complete.
  EXPECT_NE(gradebook_csv(book).find("\"ann, \"\"the\"\" 2nd\",,8,4,passed,,,not_graded,"), std::string::npos);

  // A shard that wrote its manifest but lost a result.
  write_shard(results, Shard{1, 2}, all, {});
  fs::remove(result_file(results, all[1]));
  book = merge_results({results});
  ASSERT_EQ(book.problems.size(), 1u);
  EXPECT_NE(book.problems[0].find("its result is missing"), std::string::npos);
  EXPECT_EQ(book.students.at(all[1].student).at(all[1].exercise).verdict, "not_graded");

  // A grader fault is the teacher's to re-run, never the learner's failure.
  write_shard(results, Shard{1, 2}, all, {});
  write_shard(results, Shard{0, 2}, all, {{"=cmd|calc exercise_mhsa", "grader_error"}});
  book = merge_results({results});
  ASSERT_EQ(book.problems.size(), 1u);
  EXPECT_NE(book.problems[0].find("the grader failed"), std::string::npos);
  EXPECT_EQ(nlohmann::json::parse(student_json(book, all[0].student))["score"], nullptr);
  EXPECT_NE(gradebook_csv(book).find("\n=cmd|calc,,8,,grader_error,"), std::string::npos);

  // Results of a split into another number of shards mixed in.
  write_shard(results, Shard{0, 3}, all, {});
  book = merge_results({results});
  ASSERT_FALSE(book.problems.empty());
  EXPECT_NE(book.problems[0].find("different numbers of shards (2, 3)"), std::string::npos);
}

TEST_F(ClassFolder, MergeRefusesDuplicatesAndEmptyFolders) {
  auto all = two_by_two();
  write_shard(dir_ / "a", Shard{0, 1}, all, {});
  write_shard(dir_ / "b", Shard{0, 1}, all, {});
  auto book = merge_results({dir_ / "a", dir_ / "b"});
  ASSERT_EQ(book.problems.size(), 4u);
  EXPECT_NE(book.problems[0].find("graded twice"), std::string::npos);
  // The same folder named twice is one folder.
  EXPECT_TRUE(merge_results({dir_ / "a", dir_ / "a" / "."}).problems.empty());
  fs::create_directories(dir_ / "empty");
  EXPECT_NE(usage_error([&] { merge_results({dir_ / "empty"}); }).find("no grade results"), std::string::npos);
  EXPECT_NE(usage_error([&] { merge_results({dir_ / "nowhere"}); }).find("no results folder"), std::string::npos);
}

}  // namespace
}  // namespace grader
