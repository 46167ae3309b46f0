// Each exercise checked as a whole, the way a contest's problem-package
// verifier checks a problem before it is used: every rule of the exercise
// verifier (grader/checks/verify.cpp, also `grade verify-exercise ID`) on
// every exercise, one test each.
//
// The corpus labels are the link to real grading: corpus_test asserts that
// every wrong submission has the focus points of its `missed:` label reported
// missed and the `mistake:` of its label named, so a focus point or mistake
// that appears in some label is one the grader has been seen to report.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <tuple>

#include "checks/verify.h"
#include "exercise/exercise.h"

namespace grader {
namespace {
namespace fs = std::filesystem;

fs::path root() {
  const char* env = std::getenv("GRADER_ROOT");
  return env ? fs::path(env) : fs::path(GRADER_SOURCE_DIR);
}

std::vector<std::string> rule_names() {
  std::vector<std::string> names;
  for (const auto& rule : verify_rules()) names.push_back(rule.name);
  return names;
}

class Consistency : public ::testing::TestWithParam<std::tuple<std::string, std::string>> {};

TEST_P(Consistency, Holds) {
  const auto& [exercise, rule_name] = GetParam();
  const auto& rule = verify_rule(rule_name);
  SCOPED_TRACE(rule.doc);
  for (const auto& problem : rule.run(root(), exercise)) ADD_FAILURE() << problem;
}

INSTANTIATE_TEST_SUITE_P(Exercises, Consistency,
                         ::testing::Combine(::testing::ValuesIn(list_exercises(root() / "exercises")),
                                            ::testing::ValuesIn(rule_names())),
                         [](const auto& info) { return std::get<0>(info.param) + "_" + std::get<1>(info.param); });

}  // namespace
}  // namespace grader
