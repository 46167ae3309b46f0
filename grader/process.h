// Running an untrusted program (the compiler on a learner's file, or the
// runner executing learner code) in a child process, with limits, and reporting
// what happened as data. The parent's own timer and byte counts are the trusted
// measurements; the child's exit status is only one of them.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace grader {

struct ChildLimits {
  double wall_seconds = 60;
  double cpu_seconds = 120;
  size_t output_bytes = 64 * 1024;         // per stream: stdout, stderr
  size_t result_bytes = 64 * 1024 * 1024;  // the private result channel
  size_t address_space_bytes = 0;          // 0: no limit (a backstop only, see README)
  size_t file_size_bytes = 64 * 1024 * 1024;
};

struct ChildOutcome {
  bool started = false;
  bool timed_out = false;
  int exit_code = -1;   // when exited normally
  int term_signal = 0;  // when killed by a signal
  std::string stdout_text;
  std::string stderr_text;
  bool stdout_truncated = false;
  bool stderr_truncated = false;
  std::string result;  // bytes from the private channel (fd 4 in the child)
  bool result_truncated = false;
  double wall_seconds = 0;

  bool exited_cleanly() const { return started && !timed_out && term_signal == 0 && exit_code == 0; }
  std::string describe_end() const;  // "exit status 3", "killed by signal 11 (Segmentation fault)", ...
};

struct ChildSpec {
  std::vector<std::string> argv;       // argv[0] is an absolute path
  std::vector<std::string> extra_env;  // NAME=value, added to a minimal environment
  std::string working_dir;
  std::string request;          // written to fd 3 in the child; empty: fd 3 is closed
  bool result_channel = false;  // give the child fd 4 to write its results to
  ChildLimits limits;
};

// Never throws for anything the child does; throws GraderFault if the grader
// cannot create pipes or fork.
ChildOutcome run_child(const ChildSpec& spec);

}  // namespace grader
