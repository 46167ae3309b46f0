// When the command a learner typed started: the wall time a report counts
// from (the grade script's start-up and LibTorch's load included), and what
// "compiled before this command" means for the compile cache.
#pragma once

#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <string>

namespace grader {

// Seconds since the epoch, now (the clock GRADE_STARTED is read against).
inline double epoch_seconds() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

namespace detail {
// The start as the environment gives it now (see command_started).
inline double command_start_from_environment() {
  const double now = epoch_seconds();
  const char* given = std::getenv("GRADE_STARTED");
  const char* by = std::getenv("GRADE_STARTED_PID");
  if (!given || !*given || !by || std::strtol(by, nullptr, 10) != static_cast<long>(::getpid())) return now;
  char* end = nullptr;
  const double value = std::strtod(given, &end);
  // Only a start in the last hour and not in the future is believed.
  if (end == given || *end != '\0' || value > now || value < now - 3600) return now;
  return value;
}
inline double& command_start_slot() {
  static double started = command_start_from_environment();
  return started;
}
}  // namespace detail

// Seconds since the epoch at the command's start: the grade script exports
// GRADE_STARTED ($EPOCHREALTIME) and GRADE_STARTED_PID (its own pid, which the
// grader it execs keeps) before it builds or starts the grader. Believed only
// by that process: a grader started by something the script ran (a test suite
// under `grade self-test`) inherits the variables but has another pid. Else
// the first call's time (main calls it first).
inline double command_started() { return detail::command_start_slot(); }

// Reads the start again: a process forked to run another command (the warm
// grader's, warm/server.h) after its environment was set for that command.
inline void restart_command_clock() { detail::command_start_slot() = detail::command_start_from_environment(); }

// Seconds from the command's start to now.
inline double seconds_since_command() { return epoch_seconds() - command_started(); }

// Whether `path` was last written before the command started (false where it
// cannot be read).
inline bool written_before_command(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return false;
  const double written = static_cast<double>(st.st_mtim.tv_sec) + st.st_mtim.tv_nsec * 1e-9;
  return written < command_started();
}

}  // namespace grader
