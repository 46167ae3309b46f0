// Each case's own time limit (grader/judge/case_limit.h): the rule, the steps read
// off the runner's stream, and run_child stopping a step that overstays.
#include "judge/case_limit.h"

#include <gtest/gtest.h>

#include "wire/wire.h"

namespace grader {
namespace {

TEST(CaseLimit, FloorFactorAndWholeLimit) {
  const CaseLimitRule rule{2, 50};
  struct Row {
    double reference, whole, want;
  };
  const Row rows[] = {
      {0.0001, 30, 2},   // a small case: the floor
      {-1, 30, 2},       // not run by the reference (a refusal): the floor
      {0, 30, 2},        // too fast to measure: the floor
      {0.04, 30, 2},     // 50 x 0.04 = 2: either
      {0.1, 30, 5},      // a large case: 50 times the reference
      {1, 30, 30},       // never past the whole run's limit
      {0.0001, 1.5, 1.5},  // a whole limit under the floor wins
  };
  for (const auto& row : rows) {
    SCOPED_TRACE(::testing::Message() << "reference " << row.reference << " whole " << row.whole);
    EXPECT_DOUBLE_EQ(case_limit_seconds(rule, row.reference, row.whole), row.want);
  }
  EXPECT_GT(case_limit_rule("cuda").floor_seconds, case_limit_rule("cpu").floor_seconds);
}

TEST(CaseLimit, StepsFollowTheRunnersMarkers) {
  const auto limit = case_step_limit({3, 4, 5}, 1, 6);
  const std::string ready = wire::kRunnerReady, started = wire::kCaseStarted;
  struct Row {
    std::string bytes;
    bool limited;
    size_t step;
    double seconds;
  };
  const Row rows[] = {
      {"", false, 0, 0},                                   // the runner has not started
      {ready, true, 1, 1},                                 // loading the library
      {ready + started + "0\n", true, 2, 3},               // the first case
      {ready + started + "0\n" + started + "1", true, 2, 3},  // the next marker cut mid-line: still the first
      {ready + started + "0\n" + started + "2\n", true, 3, 5},  // the third case (its index, not its rank)
      {ready + started + "7\n", false, 0, 0},              // a case it was not given
      {ready + started + "1\nRESULTS", true, 3, 6},        // the results under way: ending
      {ready + started + "0\nCA", true, 2, 3},             // a marker's first bytes are no results
      {ready + started + "0\nCASE 12x", true, 3, 6},       // but no marker goes on like that
  };
  for (const auto& row : rows) {
    SCOPED_TRACE(row.bytes);
    const auto got = limit(row.bytes);
    ASSERT_EQ(got.has_value(), row.limited);
    if (!got) continue;
    EXPECT_EQ(got->step, row.step);
    EXPECT_DOUBLE_EQ(got->seconds, row.seconds);
  }
}

// The process layer: a step that overstays its limit ends the child long before
// the whole limit, and says which limit it was; steps that keep theirs do not.
TEST(CaseLimit, RunChildStopsAStepThatOverstays) {
  ChildSpec spec;
  spec.argv = {"/bin/sh", "-c", "printf 'RUNNER-READY\\nCASE 0\\n' >&4; sleep 0.2; printf 'CASE 1\\n' >&4; sleep 30"};
  spec.result_channel = true;
  spec.limits.wall_seconds = 30;
  spec.step_limit = case_step_limit({1, 0.5}, 1, 1);
  const auto outcome = run_child(spec);
  EXPECT_TRUE(outcome.timed_out);
  ASSERT_TRUE(outcome.step_limit_seconds.has_value());
  EXPECT_DOUBLE_EQ(*outcome.step_limit_seconds, 0.5);
  EXPECT_LT(outcome.wall_seconds, 5);
  EXPECT_EQ(wire::split_runner_stream(outcome.result).last_started, 1u);

  spec.argv = {"/bin/sh", "-c", "printf 'RUNNER-READY\\nCASE 0\\n' >&4; sleep 0.6; printf 'CASE 1\\n' >&4; sleep 0.6"};
  spec.step_limit = case_step_limit({1, 1}, 1, 1);
  const auto kept = run_child(spec);  // 1.2 s in all, each step under its 1 s
  EXPECT_TRUE(kept.exited_cleanly()) << kept.describe_end();
  EXPECT_FALSE(kept.step_limit_seconds.has_value());
}

}  // namespace
}  // namespace grader
