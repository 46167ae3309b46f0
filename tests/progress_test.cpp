// The learner's progress file: what a grade records, that an interrupted
// write leaves the previous progress, that an unreadable file is moved aside
// (never lost), and that concurrent grades do not drop each other's update.
#include "learner/progress.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <fstream>
#include <thread>

namespace grader {
namespace {
namespace fs = std::filesystem;

GradeReport graded(const std::string& exercise, Verdict verdict, std::vector<std::string> missed = {}) {
  GradeReport report;
  report.exercise = exercise;
  report.verdict = verdict;
  auto add = [&](const std::string& id, FocusStatus status) {
    FocusPointResult result;
    result.point = {id, id, "", {}};
    result.status = status;
    report.focus_points.push_back(result);
  };
  for (const auto& id : missed) add(id, FocusStatus::missed);
  add("met_one", FocusStatus::met);
  return report;
}

class ProgressFile : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("progress_test_" + std::to_string(::getpid()) + "_" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    file_ = dir_ / ".learner" / "progress.json";
  }
  void TearDown() override { fs::remove_all(dir_); }
  fs::path dir_, file_;
};

TEST_F(ProgressFile, RecordsEachGrade) {
  EXPECT_TRUE(load_progress(file_).exercises.empty()) << "no file: nothing started";
  record_grade(file_, graded("exercise_mhsa", Verdict::failed, {"scaling", "masking"}));
  auto progress = load_progress(file_);
  EXPECT_EQ(progress.exercises.at("exercise_mhsa").status, "failing");
  EXPECT_EQ(progress.exercises.at("exercise_mhsa").missed, (std::vector<std::string>{"scaling", "masking"}));
  EXPECT_FALSE(progress.ever_passed("exercise_mhsa"));

  record_grade(file_, graded("exercise_mhsa", Verdict::passed));
  record_grade(file_, graded("exercise_mhsa", Verdict::compile_error));  // broken again after passing
  progress = load_progress(file_);
  const auto& mhsa = progress.exercises.at("exercise_mhsa");
  EXPECT_EQ(mhsa.status, "failing");
  EXPECT_TRUE(mhsa.missed.empty());
  EXPECT_EQ(mhsa.grades, 3);
  EXPECT_TRUE(progress.ever_passed("exercise_mhsa")) << "a solution once earned stays open";

  record_grade(file_, graded("exercise_sdpa", Verdict::grader_error));
  EXPECT_FALSE(load_progress(file_).exercises.count("exercise_sdpa")) << "a grader fault is not the learner's";

  // A CUDA kernel graded without a GPU: not assessed, not failing; and it
  // never takes back a pass earned on a GPU.
  record_grade(file_, graded("exercise_softmax_cuda", Verdict::not_assessed));
  EXPECT_EQ(load_progress(file_).exercises.at("exercise_softmax_cuda").status, "not_assessed");
  record_grade(file_, graded("exercise_softmax_cuda", Verdict::passed));
  record_grade(file_, graded("exercise_softmax_cuda", Verdict::not_assessed));
  EXPECT_EQ(load_progress(file_).exercises.at("exercise_softmax_cuda").status, "passed");
}

TEST_F(ProgressFile, InterruptedWriteLeavesThePreviousProgress) {
  record_grade(file_, graded("exercise_sdpa", Verdict::passed));
  const auto before = load_progress(file_).exercises.at("exercise_sdpa").last_graded;
  // What a grade killed while writing leaves: half a file beside the real one.
  std::ofstream(file_.string() + ".partial-12345-1") << "{\"version\": 1, \"exerc";
  auto progress = load_progress(file_);
  EXPECT_EQ(progress.exercises.at("exercise_sdpa").last_graded, before);
  EXPECT_TRUE(progress.ever_passed("exercise_sdpa"));
}

TEST_F(ProgressFile, UnreadableFileIsMovedAsideNotLost) {
  fs::create_directories(file_.parent_path());
  std::ofstream(file_) << "my notes, not JSON";
  std::string notice;
  EXPECT_TRUE(load_progress(file_, &notice).exercises.empty());
  EXPECT_NE(notice.find("moved to"), std::string::npos) << notice;
  EXPECT_FALSE(fs::exists(file_));
  size_t kept = 0;
  for (const auto& entry : fs::directory_iterator(file_.parent_path())) {
    if (entry.path().filename().string().rfind("progress.json.unreadable-", 0) == 0) {
      std::ifstream in(entry.path());
      std::string text((std::istreambuf_iterator<char>(in)), {});
      EXPECT_EQ(text, "my notes, not JSON");
      ++kept;
    }
  }
  EXPECT_EQ(kept, 1u);
}

TEST_F(ProgressFile, ConcurrentGradesKeepEveryUpdate) {
  std::vector<std::thread> graders;
  for (int i = 0; i < 8; ++i) {
    graders.emplace_back([&, i] {
      for (int j = 0; j < 10; ++j) record_grade(file_, graded("exercise_" + std::to_string(i), Verdict::failed));
    });
  }
  for (auto& thread : graders) thread.join();
  auto progress = load_progress(file_);
  ASSERT_EQ(progress.exercises.size(), 8u);
  for (const auto& [id, item] : progress.exercises) EXPECT_EQ(item.grades, 10) << id;
}

}  // namespace
}  // namespace grader
