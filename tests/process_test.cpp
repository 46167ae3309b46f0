// The child-process layer: limits and outcomes are measured by the parent.
#include "process.h"

#include <gtest/gtest.h>

#include <csignal>

namespace grader {
namespace {

ChildSpec shell(const std::string& script, double wall_seconds = 10) {
  ChildSpec spec;
  spec.argv = {"/bin/sh", "-c", script};
  spec.limits.wall_seconds = wall_seconds;
  return spec;
}

TEST(Process, CapturesOutputAndExitStatus) {
  auto outcome = run_child(shell("echo out; echo err >&2; exit 3"));
  EXPECT_EQ(outcome.stdout_text, "out\n");
  EXPECT_EQ(outcome.stderr_text, "err\n");
  EXPECT_EQ(outcome.exit_code, 3);
  EXPECT_FALSE(outcome.exited_cleanly());
  EXPECT_EQ(outcome.describe_end(), "exit status 3");
}

TEST(Process, WallClockLimitStopsAHang) {
  auto outcome = run_child(shell("sleep 30", /*wall_seconds=*/1));
  EXPECT_TRUE(outcome.timed_out);
  EXPECT_LT(outcome.wall_seconds, 5);
}

TEST(Process, OrphanedGrandchildrenDoNotHoldTheGraderUp) {
  auto outcome = run_child(shell("(sleep 30 &) ; echo started", /*wall_seconds=*/20));
  EXPECT_TRUE(outcome.exited_cleanly());
  EXPECT_LT(outcome.wall_seconds, 5);
}

TEST(Process, OutputIsCappedNotBuffered) {
  auto spec = shell("yes 0123456789 | head -c 10000000");
  spec.limits.output_bytes = 1000;
  auto outcome = run_child(spec);
  EXPECT_EQ(outcome.stdout_text.size(), 1000u);
  EXPECT_TRUE(outcome.stdout_truncated);
}

TEST(Process, SignalIsReported) {
  auto outcome = run_child(shell("kill -SEGV $$"));
  EXPECT_EQ(outcome.term_signal, SIGSEGV);
  EXPECT_NE(outcome.describe_end().find("signal 11"), std::string::npos);
}

TEST(Process, RequestAndResultChannels) {
  auto spec = shell("cat <&3 >&4");
  spec.request = std::string(1 << 20, 'x');  // larger than a pipe buffer
  spec.result_channel = true;
  auto outcome = run_child(spec);
  EXPECT_TRUE(outcome.exited_cleanly());
  EXPECT_EQ(outcome.result, spec.request);
}

TEST(Process, ResultChannelIsCapped) {
  auto spec = shell("head -c 5000000 /dev/zero >&4");
  spec.result_channel = true;
  spec.limits.result_bytes = 4096;
  auto outcome = run_child(spec);
  EXPECT_TRUE(outcome.result_truncated);
  EXPECT_EQ(outcome.result.size(), 4096u);
}

}  // namespace
}  // namespace grader
