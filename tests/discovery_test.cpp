// Finding a student's answer in a class folder (discovery.h): only the
// student's own files, never through a link that leads out of the folder; two
// different answers are not guessed between; a misnamed file is named.
#include "exercise/discovery.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <fstream>

#include "project_root.h"

namespace grader {
namespace {
namespace fs = std::filesystem;

TEST(NearMiss, NamesThatLookMeantForTheFile) {
  struct Row {
    const char* name;
    bool miss;
  };
  const std::vector<Row> rows = {
      {"sdpa.cpp", false},      {"SDPA.cpp", true},       {"Sdpa.CPP", true},       {"sdpa (1).cpp", true},
      {"sdpa(2).cpp", true},    {"sdpa-1.cpp", true},     {"sdpa_2.cpp", true},     {"sdpa copy.cpp", true},
      {"sdpa - copy.cpp", true}, {"SDPA (1).cpp", true},  {"sdpa.cc", true},        {"sdpa.cpp.txt", true},
      {"sdpa.txt", true},       {"sdpa_old.cpp", false},  {"sdpa2.cpp", false},     {"mhsa.cpp", false},
      {"sdpa (x).cpp", false},  {"sdpa ().cpp", false},   {"notes.md", false},      {"sdpa_test.cpp", false},
  };
  for (const auto& row : rows) EXPECT_EQ(near_miss(row.name, "sdpa.cpp"), row.miss) << row.name;
}

class StudentFolder : public ::testing::Test {
 protected:
  void SetUp() override {
    char pattern[] = "/tmp/grade-discovery-XXXXXX";
    root_ = mkdtemp(pattern);
    exercise_.id = "exercise_sdpa";
    exercise_.learner_files = {"sdpa.cpp"};
    fs::create_directories(root_ / "ann");
  }
  void TearDown() override { fs::remove_all(root_); }
  void write(const fs::path& file, const std::string& text) {
    fs::create_directories(file.parent_path());
    std::ofstream(file) << text;
  }
  fs::path root_;
  Exercise exercise_;
};

TEST_F(StudentFolder, EitherPlaceAndTheSameAnswerTwice) {
  write(root_ / "ann" / "exercises" / "exercise_sdpa" / "sdpa.cpp", "answer");
  auto found = find_answer(root_ / "ann", exercise_);
  EXPECT_TRUE(found.invalid.empty()) << found.invalid;
  EXPECT_EQ(found.answer.filename(), "sdpa.cpp");
  write(root_ / "ann" / "sdpa.cpp", "answer");
  found = find_answer(root_ / "ann", exercise_);
  EXPECT_TRUE(found.invalid.empty()) << found.invalid;
  EXPECT_EQ(found.answer, fs::canonical(root_ / "ann" / "sdpa.cpp"));
  ASSERT_EQ(found.warnings.size(), 1u);
  EXPECT_NE(found.warnings[0].find("the same answer"), std::string::npos);
}

TEST_F(StudentFolder, TwoDifferentAnswersAreNotGuessedBetween) {
  write(root_ / "ann" / "sdpa.cpp", "one");
  write(root_ / "ann" / "exercises" / "exercise_sdpa" / "sdpa.cpp", "two");
  auto found = find_answer(root_ / "ann", exercise_);
  EXPECT_TRUE(found.answer.empty());
  EXPECT_NE(found.invalid.find("two different answers"), std::string::npos) << found.invalid;
}

TEST_F(StudentFolder, LinksOutOfTheFolderAreNeverFollowed) {
  // exercises/ linked to the grader's model solutions.
  fs::create_directory_symlink(test_support::project_root() / "solutions", root_ / "ann" / "exercises");
  auto found = find_answer(root_ / "ann", exercise_);
  EXPECT_TRUE(found.answer.empty());
  EXPECT_NE(found.invalid.find("leads out of the student's folder"), std::string::npos) << found.invalid;
  // A file linked from another student's folder.
  fs::remove(root_ / "ann" / "exercises");
  write(root_ / "bob" / "sdpa.cpp", "bob's");
  fs::create_symlink(root_ / "bob" / "sdpa.cpp", root_ / "ann" / "sdpa.cpp");
  found = find_answer(root_ / "ann", exercise_);
  EXPECT_TRUE(found.answer.empty());
  EXPECT_NE(found.invalid.find("leads out"), std::string::npos) << found.invalid;
  // A link that leads nowhere.
  fs::remove(root_ / "ann" / "sdpa.cpp");
  fs::create_symlink(root_ / "ann" / "gone.cpp", root_ / "ann" / "sdpa.cpp");
  found = find_answer(root_ / "ann", exercise_);
  EXPECT_NE(found.invalid.find("leads nowhere"), std::string::npos) << found.invalid;
}

TEST_F(StudentFolder, ALinkInsideTheFolderIsTheStudentsOwn) {
  write(root_ / "ann" / "src" / "sdpa.cpp", "answer");
  fs::create_symlink("src/sdpa.cpp", root_ / "ann" / "sdpa.cpp");
  auto found = find_answer(root_ / "ann", exercise_);
  EXPECT_TRUE(found.invalid.empty()) << found.invalid;
  EXPECT_EQ(found.answer, fs::canonical(root_ / "ann" / "src" / "sdpa.cpp"));
}

TEST_F(StudentFolder, AMisnamedFileIsNamed) {
  write(root_ / "ann" / "SDPA (1).cpp", "answer");
  write(root_ / "ann" / "notes.md", "notes");
  auto found = find_answer(root_ / "ann", exercise_);
  EXPECT_TRUE(found.answer.empty());
  EXPECT_TRUE(found.invalid.empty());
  ASSERT_EQ(found.warnings.size(), 1u);
  EXPECT_NE(found.warnings[0].find("SDPA (1).cpp looks meant for it"), std::string::npos) << found.warnings[0];
}

}  // namespace
}  // namespace grader
