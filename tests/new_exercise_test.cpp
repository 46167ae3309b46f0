// `grade new-exercise ID` (grader/cli/new_exercise.cpp): the skeleton's files
// land where the conventions look for them, with every placeholder filled,
// its data loads as an exercise, and nothing is ever written over.
#include <gtest/gtest.h>


#include "cli/new_exercise.h"
#include "base/errors.h"
#include "exercise/exercise.h"
#include "learner/learner.h"
#include "project_root.h"
#include "exercise/questions.h"

namespace grader {
namespace {
namespace fs = std::filesystem;
using test_support::project_root;

std::string text_of(const fs::path& file) { return read_whole(file).value_or(""); }

class NewExercise : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = fs::temp_directory_path() / ("new_exercise_test." + std::to_string(::getpid()));
    fs::remove_all(root_);
    fs::create_directories(root_ / "templates");
    fs::create_directories(root_ / "exercises");
    fs::copy(project_root() / "templates" / "new-exercise", root_ / "templates" / "new-exercise",
             fs::copy_options::recursive);
    // An existing exercise, so the new one's place comes after it.
    fs::copy(project_root() / "exercises" / "exercise_sdpa", root_ / "exercises" / "exercise_sdpa",
             fs::copy_options::recursive);
    fs::copy_file(project_root() / "exercises" / "shared.yaml", root_ / "exercises" / "shared.yaml");
  }
  void TearDown() override { fs::remove_all(root_); }
  fs::path root_;
};

TEST_F(NewExercise, WritesEveryPartWhereTheConventionsLook) {
  const auto written = cli::new_exercise(root_, "exercise_layer_norm");
  const std::vector<fs::path> expected = {
      "exercises/exercise_layer_norm/exercise.yaml",        "exercises/exercise_layer_norm/README.md",
      "exercises/exercise_layer_norm/.grader/questions.yaml","exercises/exercise_layer_norm/layer_norm.h",
      "exercises/exercise_layer_norm/layer_norm.cpp",       "exercises/exercise_layer_norm/.starter/layer_norm.cpp",
      "grader/checks/exercise_layer_norm/checks.cpp",       "grader/checks/exercise_layer_norm/driver.cpp",
      "solutions/exercise_layer_norm/layer_norm.cpp",       "tests/submissions/exercise_layer_norm/README.md"};
  EXPECT_EQ(written.size(), expected.size());
  for (const auto& file : expected) {
    ASSERT_TRUE(fs::is_regular_file(root_ / file)) << file;
    EXPECT_EQ(text_of(root_ / file).find('@'), std::string::npos) << file << " keeps a placeholder";
  }
  EXPECT_EQ(text_of(root_ / expected[4]), text_of(root_ / expected[5])) << "the starter's copy differs";
  const auto exercise = load_exercise(root_ / "exercises" / "exercise_layer_norm");
  EXPECT_EQ(exercise.id, "exercise_layer_norm");
  EXPECT_EQ(exercise.learner_files, std::vector<std::string>{"layer_norm.cpp"});
  EXPECT_GT(exercise.order, load_exercise(root_ / "exercises" / "exercise_sdpa").order);
  EXPECT_FALSE(load_questions(exercise).empty());
  EXPECT_NE(text_of(root_ / expected[6]).find("namespace grader::exercise_layer_norm"), std::string::npos);
}

TEST_F(NewExercise, RefusesBadIdsAndWritesNothingOver) {
  for (const std::string id : {"layer_norm", "exercise_", "exercise_Layer", "exercise_a/../b", "exercise_a b"}) {
    EXPECT_THROW(cli::new_exercise(root_, id), UsageError) << id;
  }
  EXPECT_FALSE(fs::exists(root_ / "grader"));
  fs::create_directories(root_ / "solutions" / "exercise_taken");
  EXPECT_THROW(cli::new_exercise(root_, "exercise_taken"), UsageError);
  EXPECT_FALSE(fs::exists(root_ / "exercises" / "exercise_taken")) << "written before the refusal";
  EXPECT_THROW(cli::new_exercise(root_, "exercise_sdpa"), UsageError);
  EXPECT_TRUE(fs::exists(root_ / "exercises" / "exercise_sdpa" / "sdpa.cpp"));
}

}  // namespace
}  // namespace grader
