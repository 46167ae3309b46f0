#include "stop.h"

#include <pthread.h>
#include <unistd.h>

#include <fcntl.h>

#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <mutex>
#include <set>
#include <string>
#include <thread>

#include "process.h"
#include "sandbox.h"

namespace grader {
namespace {

std::atomic<bool> stopping{false};
std::mutex scratch_mutex;
std::set<std::filesystem::path>& scratch_folders() {
  static std::set<std::filesystem::path> folders;
  return folders;
}

const char* said_for(int signal) {
  switch (signal) {
    case SIGINT: return "Ctrl-C";
    case SIGTERM: return "SIGTERM";
    default: return "SIGHUP";
  }
}

}  // namespace

void track_scratch(const std::filesystem::path& folder) {
  std::lock_guard<std::mutex> lock(scratch_mutex);
  scratch_folders().insert(folder);
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
  sigset_t stops;
  sigemptyset(&stops);
  for (int signal : {SIGINT, SIGTERM, SIGHUP}) sigaddset(&stops, signal);
  if (pthread_sigmask(SIG_BLOCK, &stops, nullptr) != 0) return;  // the default action stays: no worse than before
  std::thread([stops] {
    int signal = 0;
    if (sigwait(&stops, &signal) != 0) return;
    stopping = true;
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
    // The killed children's files are complete once they are gone: a moment for
    // the kernel to end them before their folders go.
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    {
      std::lock_guard<std::mutex> lock(scratch_mutex);
      for (const auto& folder : scratch_folders()) remove_tree(folder);
    }
    _exit(128 + signal);
  }).detach();
}

}  // namespace grader
