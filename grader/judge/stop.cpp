#include "judge/stop.h"

#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <mutex>
#include <set>
#include <string>
#include <thread>

#include "judge/process.h"
#include "judge/sandbox.h"

namespace grader {
namespace {

std::atomic<bool> stopping{false};
std::mutex scratch_mutex;
std::set<std::filesystem::path>& scratch_folders() {
  static std::set<std::filesystem::path> folders;
  return folders;
}

int stop_pipe[2] = {-1, -1};
std::atomic<int> signals_seen{0};

void on_stop_signal(int signal) {
  // A second Ctrl-C while the stop cleans up: end now.
  if (signals_seen.fetch_add(1) > 0) _exit(128 + signal);
  const unsigned char which = static_cast<unsigned char>(signal);
  (void)!write(stop_pipe[1], &which, 1);  // async-signal-safe: the stopping thread does the rest
}

const char* said_for(int signal) {
  switch (signal) {
    case SIGINT: return "Ctrl-C";
    case SIGTERM: return "SIGTERM";
    default: return "SIGHUP";
  }
}

}  // namespace

bool track_scratch(const std::filesystem::path& folder) {
  std::lock_guard<std::mutex> lock(scratch_mutex);
  if (stopping.load()) return false;
  scratch_folders().insert(folder);
  return true;
}

void untrack_scratch(const std::filesystem::path& folder) {
  std::lock_guard<std::mutex> lock(scratch_mutex);
  scratch_folders().erase(folder);
}

bool stop_requested() { return stopping.load(); }

void wait_if_stopping() {
  while (stopping.load()) pause();  // the stopping thread ends the process
}

void stop_cleanly_on_signals() {
  // A handler rather than a blocked mask: whichever thread the signal lands on
  // (LibTorch starts some before main), it only wakes the stopping thread.
  if (stop_pipe[0] >= 0 || pipe2(stop_pipe, O_CLOEXEC) != 0) return;
  fcntl(stop_pipe[1], F_SETFL, fcntl(stop_pipe[1], F_GETFL) | O_NONBLOCK);
  std::thread([] {
    unsigned char which = 0;
    while (read(stop_pipe[0], &which, 1) != 1) {
      if (errno != EINTR) return;
    }
    const int signal = which;
    {
      std::lock_guard<std::mutex> lock(scratch_mutex);  // no folder is tracked after this
      stopping = true;
    }
    const std::string said = std::string("\ngrade: stopped by ") + said_for(signal) +
                             ": no report for what was still being graded; its processes are killed and its "
                             "temporary files removed\n";
    (void)!write(STDERR_FILENO, said.data(), said.size());
    // Whatever the other threads still print goes nowhere: a run cut short is no report.
    int devnull = open("/dev/null", O_WRONLY | O_CLOEXEC);
    if (devnull >= 0) {
      dup2(devnull, STDOUT_FILENO);
      dup2(devnull, STDERR_FILENO);
    }
    kill_active_children();
    // A killed child ends a moment later (a sandboxed one with its namespace):
    // until then it may still write in its folder, so removal is tried again
    // until every folder is gone, for a few seconds at most.
    std::lock_guard<std::mutex> lock(scratch_mutex);
    const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(5);
    while (true) {
      bool all_gone = true;
      for (const auto& folder : scratch_folders()) all_gone &= remove_tree(folder);
      if (all_gone || std::chrono::steady_clock::now() > give_up) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    // Ended by the signal itself, as without the stop: a shell loop around the
    // grade stops too (it sees a child killed by SIGINT, not one exiting 130).
    struct sigaction fallback {};
    fallback.sa_handler = SIG_DFL;
    sigemptyset(&fallback.sa_mask);
    sigaction(signal, &fallback, nullptr);
    kill(getpid(), signal);
    _exit(128 + signal);
  }).detach();
  struct sigaction action {};
  action.sa_handler = on_stop_signal;
  sigemptyset(&action.sa_mask);
  action.sa_flags = SA_RESTART;
  for (int signal : {SIGINT, SIGTERM, SIGHUP}) sigaction(signal, &action, nullptr);
}

}  // namespace grader
