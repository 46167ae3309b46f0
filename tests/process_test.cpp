// The child-process layer: limits and outcomes are measured by the parent.
#include "judge/process.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <filesystem>

#include "judge/sandbox.h"
#include "runner/library_files.h"

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

namespace grader {
namespace {

TEST(Process, OutputLimitStopsTheChild) {
  auto spec = shell("while true; do echo 0123456789; done", /*wall_seconds=*/20);
  spec.limits.output_bytes = 4096;
  spec.limits.stop_at_output_limit = true;
  auto outcome = run_child(spec);
  EXPECT_TRUE(outcome.output_exceeded);
  EXPECT_FALSE(outcome.timed_out);
  EXPECT_LT(outcome.wall_seconds, 5);
  EXPECT_EQ(outcome.stdout_text.size(), 4096u);
}

TEST(Process, DropsToNobodyWhenRoot) {
  if (geteuid() != 0) GTEST_SKIP() << "needs root (switching users); NOT counted as passed";
  auto spec = shell("id -u");
  spec.drop_to_nobody = true;
  auto outcome = run_child(spec);
  EXPECT_EQ(outcome.stdout_text, "65534\n");
}

// The cgroup's counters, not the child's word, decide memory and CPU verdicts.
class CgroupLimits : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string why;
    if (!Cgroup::create({64ull << 20, 8}, &why)) GTEST_SKIP() << "no usable cgroups here (" << why << "); NOT passed";
  }
};

TEST_F(CgroupLimits, MemoryBombIsKilledAndCounted) {
  auto spec = shell("tail /dev/zero", /*wall_seconds=*/30);  // buffers one endless line
  spec.use_cgroup = true;
  spec.limits.memory_bytes = 128ull << 20;
  spec.limits.processes = 16;
  auto outcome = run_child(spec);
  EXPECT_TRUE(outcome.in_cgroup);
  EXPECT_TRUE(outcome.memory_exceeded) << outcome.describe_end() << "\n" << outcome.stderr_text;
  EXPECT_FALSE(outcome.timed_out);
}

TEST_F(CgroupLimits, CpuTimeOfAllProcessesIsLimited) {
  // Two busy processes: each stays under any per-process limit, together they pass 1 s.
  auto spec = shell("(while :; do :; done) & while :; do :; done", /*wall_seconds=*/30);
  spec.use_cgroup = true;
  spec.limits.cpu_seconds = 1;
  spec.limits.processes = 16;
  auto outcome = run_child(spec);
  EXPECT_TRUE(outcome.cpu_exceeded);
  EXPECT_TRUE(outcome.timed_out);
  EXPECT_GE(outcome.cpu_seconds, 1.0);
  EXPECT_LT(outcome.wall_seconds, 10);
}

TEST_F(CgroupLimits, ProcessCapIsCountedAndNothingSurvives) {
  auto spec = shell("for i in $(seq 40); do sleep 30 & done; wait", /*wall_seconds=*/3);
  spec.use_cgroup = true;
  spec.limits.processes = 8;
  auto outcome = run_child(spec);
  EXPECT_TRUE(outcome.process_cap_hit);
}

}  // namespace
}  // namespace grader

// The runner's refusal to read LibTorch's library files once loaded
// (runner/library_files.h), in a child of this test (which has LibTorch
// loaded too): the library files cannot be opened, the files beside them and
// elsewhere can. Skipped, with the reason, where the kernel has no Landlock.
TEST(LibraryFiles, LoadedLibTorchFilesCannotBeReadOthersCan) {
  const auto files = grader::loaded_library_files({"libtorch", "libc10"});
  ASSERT_FALSE(files.empty()) << "this test program has no LibTorch loaded";
  std::string why;
  const int probe = grader::reading_ruleset(files, why);
  if (probe < 0) GTEST_SKIP() << "not checked here: " << why;
  close(probe);
  // A file beside the first library that is none of them.
  std::string beside;
  const auto folder = std::filesystem::path(files.front()).parent_path();
  for (const auto& entry : std::filesystem::directory_iterator(folder)) {
    const auto name = entry.path().filename().string();
    if (entry.is_regular_file() && name.rfind("libtorch", 0) != 0 && name.rfind("libc10", 0) != 0) {
      beside = entry.path().string();
      break;
    }
  }
  ASSERT_FALSE(beside.empty());
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    if (!grader::refuse_reading_libtorch(-1).empty()) _exit(10);
    for (const auto& file : files) {
      const int fd = open(file.c_str(), O_RDONLY | O_CLOEXEC);
      if (fd >= 0 || errno != EACCES) _exit(11);
    }
    // The same file through a link in another folder, or the root's view.
    const int through_root = open(("/proc/self/root" + files.front()).c_str(), O_RDONLY | O_CLOEXEC);
    if (through_root >= 0) _exit(12);
    for (const auto& readable : {beside, std::string("/etc/hostname"), std::string("/proc/self/status")}) {
      const int fd = open(readable.c_str(), O_RDONLY | O_CLOEXEC);
      if (fd < 0 && std::filesystem::exists(readable)) _exit(13);
      if (fd >= 0) close(fd);
    }
    _exit(0);
  }
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0) << "10: not applied, 11: a library file opened, 12: opened through "
                                       "/proc/self/root, 13: another file refused";
}

