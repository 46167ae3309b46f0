#include "learner/watch.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/inotify.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <csignal>
#include <iostream>

#include "base/errors.h"
#include "learner/learner.h"
#include "report/formats.h"
#include "report/report.h"
#include "base/profile.h"

namespace grader {
namespace fs = std::filesystem;

namespace {

// Ctrl-C (or SIGTERM) sets the flag and wakes the wait through a pipe.
std::atomic<bool> watch_stop_requested{false};
int wake_pipe[2] = {-1, -1};

extern "C" void on_stop_signal(int) {
  watch_stop_requested = true;
  if (wake_pipe[1] >= 0) {
    char byte = 1;
    [[maybe_unused]] auto ignored = ::write(wake_pipe[1], &byte, 1);
  }
}

// The file's folder, watched for what editors do when they save.
class FileEvents {
 public:
  explicit FileEvents(const fs::path& file) : name_(file.filename().string()) {
    fd_ = ::inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
    if (fd_ < 0) return;
    auto dir = file.has_parent_path() ? file.parent_path() : fs::path(".");
    if (::inotify_add_watch(fd_, dir.c_str(), IN_CLOSE_WRITE | IN_MOVED_TO | IN_CREATE) < 0) {
      ::close(fd_);
      fd_ = -1;
    }
  }
  ~FileEvents() {
    if (fd_ >= 0) ::close(fd_);
  }
  FileEvents(const FileEvents&) = delete;
  FileEvents& operator=(const FileEvents&) = delete;
  bool ok() const { return fd_ >= 0; }
  int fd() const { return fd_; }

  // What the pending events say of the watched file (read now).
  struct Seen {
    bool ours = false;     // any event of the watched file
    bool written = false;  // a write of it ended (closed after writing, or renamed into place)
  };
  Seen drain() {
    Seen seen;
    alignas(inotify_event) char buffer[16384];
    for (;;) {
      ssize_t got = ::read(fd_, buffer, sizeof buffer);
      if (got <= 0) break;
      for (ssize_t at = 0; at < got;) {
        auto* event = reinterpret_cast<inotify_event*>(buffer + at);
        if (event->len > 0 && name_ == event->name) {
          seen.ours = true;
          if (event->mask & (IN_CLOSE_WRITE | IN_MOVED_TO)) seen.written = true;
        }
        at += static_cast<ssize_t>(sizeof(inotify_event) + event->len);
      }
    }
    return seen;
  }

 private:
  std::string name_;
  int fd_ = -1;
};

enum class Woken { change, stop };

// Waits for a save of the file (or Enter), then lets the editor finish
// writing: a save is often several events in a row.
Woken wait_for_change(FileEvents* events, bool manual) {
  for (;;) {
    pollfd fds[2] = {{wake_pipe[0], POLLIN, 0}, {manual ? STDIN_FILENO : events->fd(), POLLIN, 0}};
    if (::poll(fds, 2, -1) < 0 && errno != EINTR) return Woken::stop;
    if (watch_stop_requested) return Woken::stop;
    if (!(fds[1].revents & (POLLIN | POLLHUP))) continue;
    if (manual) {
      std::string line;
      if (!std::getline(std::cin, line)) return Woken::stop;  // end of input
      return Woken::change;
    }
    auto seen = events->drain();
    if (!seen.ours) continue;
    // Then quiet: the save is complete. The events of one save come within a
    // millisecond or two; once a write of the file has ended, 5 ms of quiet
    // is enough, else 40 (a file just created, still being written). A later
    // save grades again after this grade.
    for (;;) {
      pollfd quiet[2] = {{wake_pipe[0], POLLIN, 0}, {events->fd(), POLLIN, 0}};
      if (::poll(quiet, 2, seen.written ? 5 : 40) <= 0) break;
      if (watch_stop_requested) return Woken::stop;
      auto more = events->drain();
      seen.written = seen.written || more.written;
    }
    return Woken::change;
  }
}

}  // namespace

int watch(const GradeOptions& options, const WatchOptions& watch_options) {
  if (::pipe2(wake_pipe, O_CLOEXEC | O_NONBLOCK) != 0) throw GraderFault("watch: cannot make a pipe");
  struct sigaction action {};
  action.sa_handler = on_stop_signal;
  action.sa_flags = SA_RESTART;  // a grade under way is not disturbed; poll() still wakes
  sigemptyset(&action.sa_mask);
  ::sigaction(SIGINT, &action, nullptr);
  ::sigaction(SIGTERM, &action, nullptr);

  bool manual = watch_options.manual;
  FileEvents events(watch_options.file);
  std::string mode_note;
  if (!manual && !events.ok()) {
    manual = true;
    mode_note = "file events are unavailable here (inotify): press Enter to grade again";
  }
  int status = kExitNotPassed;
  Prepared next;  // the next grade, started ahead
  for (int round = 1; !watch_stop_requested; ++round) {
    if (watch_options.color) std::cout << "\x1b[H\x1b[2J";  // a fresh screen for each grade
    std::cout << "watching " << printable(watch_options.file.string()) << " (grade " << round << ", "
              << local_time("%H:%M:%S") << "); " << (manual ? "press Enter to grade again" : "save it to grade again") << ", Ctrl-C to stop\n";
    if (!mode_note.empty()) std::cout << "notice: " << mode_note << "\n";
    std::cout << "\n" << std::flush;
    try {
      auto report = grade(options, std::move(next));
      if (watch_options.on_grade) watch_options.on_grade(report);
      std::cout << render_text(report, watch_options.color) << std::flush;
      if (watch_options.profile) std::cerr << profile::table("where this grade's time went, from the save (--profile)");
      status = exit_code_for(report.verdict);
    } catch (const Error& error) {
      // A broken exercise or a grader fault: said, and the watch goes on.
      std::cout << "grade: " << error.what() << "\n" << std::flush;
      status = error.exit_code();
    }
    if (watch_stop_requested) break;
    // The next grade's runner and compiler start now, while the learner edits.
    try {
      next = prepare_grade(options, true);
    } catch (const std::exception&) {  // the next grade, started afresh, says what is wrong
      next.reset();
    }
    if (wait_for_change(&events, manual) == Woken::stop) break;
    profile::restart_from_now();  // the next table counts from the save
  }
  std::cout << "\nwatch stopped.\n" << std::flush;
  ::close(wake_pipe[0]);
  ::close(wake_pipe[1]);
  wake_pipe[0] = wake_pipe[1] = -1;
  return status;
}

}  // namespace grader
