// How long a child was ready to run but waited for a CPU: the kernel's
// per-thread run-queue delay (/proc/TID/schedstat, its second field). Time
// limits subtract it, so that a limit counts the child's own time (running,
// or sleeping by its own choice) and a verdict does not depend on how busy
// the machine is; a wall-clock backstop still bounds every run.
#pragma once

#include <sys/types.h>

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace grader {

// The run-queue delay of one thread in seconds (nullopt: gone, or the kernel
// keeps no schedstat).
std::optional<double> run_queue_delay_seconds(pid_t tid);

// The threads of process `pid` (from /proc/PID/task).
std::vector<pid_t> threads_of(pid_t pid);

class StallMeter {
 public:
  // `threads` lists the child's threads now (a cgroup's, or one process's).
  explicit StallMeter(std::function<std::vector<pid_t>()> threads);

  // The longest wait for a CPU of one of its threads since the meter began:
  // the threads run in turn with the rest of the machine, and the one held
  // back longest says how much the load stretched the wall clock.
  double seconds();

 private:
  std::function<std::vector<pid_t>()> threads_;
  std::map<pid_t, double> first_;  // each thread's delay when first seen (0 for one born later)
  double longest_ = 0;
};

// The wall-clock time a limit of `limit` seconds allows, `stalled` seconds of
// which the child spent waiting for a CPU: the limit plus the wait, never
// more than the backstop (kStallBackstopFactor times the limit, and at least
// kStallBackstopFloor seconds more).
constexpr double kStallBackstopFactor = 20;
constexpr double kStallBackstopFloor = 30;
double wall_allowance(double limit, double stalled);

}  // namespace grader
