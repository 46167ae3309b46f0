// The default seed: the same exercise and file always draw the same inputs,
// any change to either draws others, and it is a seed --seed accepts.
#include <gtest/gtest.h>

#include "judge/seed.h"

namespace grader {
namespace {

TEST(DefaultSeed, FollowsTheExerciseAndTheFileOnly) {
  const std::string exercise = "id: exercise_sdpa\ncases: []\n";
  const std::string file = "torch::Tensor sdpa(...) { return q; }\n";
  const auto seed = default_seed(exercise, file);
  EXPECT_EQ(default_seed(exercise, file), seed) << "the same bytes, the same seed";
  EXPECT_LT(seed, 1000000000u);
  struct Row {
    const char* what;
    std::string exercise, file;
  };
  const std::vector<Row> others = {
      {"an edit to the file", exercise, file + " "},
      {"a new version of the exercise", exercise + "# v2\n", file},
      {"the boundary between the two moved", exercise + "t", file.substr(1)},
      {"an empty file", exercise, ""},
  };
  for (const auto& row : others) {
    EXPECT_NE(default_seed(row.exercise, row.file), seed) << row.what;
    EXPECT_LT(default_seed(row.exercise, row.file), 1000000000u) << row.what;
  }
}

}  // namespace
}  // namespace grader
