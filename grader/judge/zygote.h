// A runner that has loaded LibTorch once and forks one child per submission
// (grader-runner --zygote; the protocol: zygote_protocol.h). Each child is
// what a fresh runner is when its main starts: its own process group, cgroup,
// limits, descriptors and system-call filter, in the sandbox the zygote was
// started in (the runner's view without a scratch folder: the compiled object
// arrives as a descriptor). LibTorch's start, about half a second of CPU, is
// paid once per zygote instead of once per grade. run_child (process.h) uses
// one where ChildSpec::zygote is set, and starts a fresh runner where the
// zygote is gone.
#pragma once

#include <sys/types.h>

#include <atomic>
#include <cstdint>
#include <functional>
#include <future>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include "judge/process.h"
#include "judge/zygote_protocol.h"

namespace grader {

class Zygote {
 public:
  // Starts `spec` (the sandboxed runner with --zygote) on a thread of its own;
  // it gets the control socket as fd 3. `view_key` and `stamps`: its place in
  // the registry (zygote_for), where a successor is found once it is gone.
  Zygote(ChildSpec spec, std::string view_key, std::string stamps);
  ~Zygote();  // closes the control socket: the zygote ends once its children have
  Zygote(const Zygote&) = delete;
  Zygote& operator=(const Zygote&) = delete;

  bool alive() const;

  // A child forked for one submission and stopped before its runner starts,
  // waiting for go() (once the grader has put it in its cgroup).
  struct Child {
    pid_t pid = -1;         // in the grader's namespace (the kernel's word, not the child's)
    int status_fd = -1;     // go() is sent here; the wait status arrives here
    int pidfd = -1;         // signals reach this process, never a later one with its pid
    uint64_t inherited_anon_bytes = 0;
    double start_cpu_seconds = 0;  // counted as the child's: a fresh runner's CPU holds LibTorch's start
    bool lost = false;      // the zygote ended without its wait status (the grader's failure)
  };
  // Sends the request with its descriptors (in zygote::Fd's order, the
  // status socket's end excepted: made here) and waits up to `wait_seconds`
  // for the child's hello. nullopt: the zygote is gone or did not answer
  // (nothing of it runs).
  std::optional<Child> spawn(const zygote::SpawnRequest& request, const int (&fds)[zygote::kFdCount],
                             double wait_seconds);

 private:
  friend std::shared_ptr<Zygote> current_zygote(const std::shared_ptr<Zygote>& held);
  const ChildSpec origin_;  // as given: what a successor starts from
  const std::string view_key_, stamps_;
  std::unique_ptr<ChildSpec> spec_;
  int control_ = -1;
  std::future<ChildOutcome> outcome_;
  std::mutex mutex_;  // one spawn at a time on the control socket
  std::atomic<bool> broken_{false};  // stopped answering: not used again
  std::atomic<bool> ended_{false};   // its process ended (or never started)
  std::atomic<pid_t> pid_{-1};       // the process run_child started (bwrap, or the runner)
};

// The zygote for a runner started as `runner` (ChildSpec of a fresh runner
// of `view_key`'s sandbox): one per distinct key for the grader's life,
// started on first use (`start` makes its spec). Null where zygotes are off
// (GRADER_FRESH_RUNNERS=1 in the environment).
// A zygote of the same view with other stamps (`stamps`: the files it loaded,
// with their times) is replaced.
std::shared_ptr<Zygote> zygote_for(const std::string& view_key, const std::string& stamps,
                                   const std::function<ChildSpec()>& start);

// `held` while it answers; once it is gone, the registry's zygote for the
// view and stamps it was started with (a new one where none is alive). A
// grade prepared before its zygote ended forks from the successor instead of
// falling back to a fresh runner.
std::shared_ptr<Zygote> current_zygote(const std::shared_ptr<Zygote>& held);

// Whether runners may be forked at all here (not with GRADER_FRESH_RUNNERS=1).
bool zygotes_enabled();

// Ends every zygote (the grader's end), except those borrowed.
void close_zygotes();

// In a process just forked from the one whose zygotes these are (the warm
// grader's, warm/server.h): they stay usable here (a spawn is one message on
// their control socket, its answer on a socket of its own), but they are
// the parent's: never ended, waited for or replaced from here. Zygotes
// started here later are this process's own.
void borrow_zygotes_after_fork();

// Where set, a zygote the registry replaces (a rebuild changed what it
// loaded) is handed to `keeper` instead of being ended at once: the warm
// grader ends it once no command it forked may still be using it. Null:
// ended at once (a grader's own zygotes).
void keep_replaced_zygotes(std::function<void(std::shared_ptr<Zygote>)> keeper);

}  // namespace grader
