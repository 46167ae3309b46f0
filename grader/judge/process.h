// Running an untrusted program (the compiler on a learner's file, or the
// runner executing learner code) in a child process, with limits, and reporting
// what happened as data. The parent's own timer and byte counts are the trusted
// measurements; the child's exit status is only one of them.
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <functional>
#include <future>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace grader {

class Zygote;

struct ChildLimits {
  double wall_seconds = 60;
  double cpu_seconds = 120;
  size_t output_bytes = 64 * 1024;         // per stream: stdout, stderr
  size_t result_bytes = 64 * 1024 * 1024;  // the private result channel
  size_t address_space_bytes = 0;          // 0: no limit (a backstop only, see docs/sandbox.md)
  size_t file_size_bytes = 64 * 1024 * 1024;
  size_t memory_bytes = 0;            // cgroup memory limit; 0: none
  int processes = 0;                  // cgroup cap on processes and threads; 0: none
  bool stop_at_output_limit = false;  // kill the child once a stream passes output_bytes
};

// A limit on one step of a run (a case of a grade), read off the result
// channel as it arrives (ChildSpec::step_limit): the step under way, a
// number that grows, and the seconds it may take from its start (wall-clock
// seconds less those it waited for a CPU, stall.h).
struct StepLimit {
  size_t step = 0;
  double seconds = 0;
};

// Where the bytes of a runner's result channel say its run stands: its
// start-up done (ready), the case markers so far, the last case begun, and
// whether its results are in whole.
struct RunStage {
  bool ready = false;
  size_t case_markers = 0;
  std::optional<size_t> last_started;
  bool results_whole = false;
};

// What one case of a measured run (ChildSpec::memory_peak_through_case) took,
// by the cgroup's count: what was in use when the grade saw it begin, and the
// most in use until the grade saw the next begin (cgroup v1, whose peak can be
// restarted; none on v2).
struct CaseMemory {
  size_t index = 0;
  uint64_t start = 0, peak = 0;
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
  // Of which it waited for a CPU (stall.h): the load it saw; limits leave it out.
  double stalled_seconds = 0;
  // From the cgroup, when the child ran in one (trusted: the child cannot change them).
  bool in_cgroup = false;
  double cpu_seconds = 0;
  bool cpu_exceeded = false;     // also sets timed_out
  // A step ran past its own limit (also sets timed_out): how long it was allowed.
  std::optional<double> step_limit_seconds;
  bool memory_exceeded = false;  // the kernel killed something of it for memory
  std::optional<uint64_t> memory_peak_bytes;  // the most it held at once, by the cgroup's count
  bool measured_through_case = false;  // ChildSpec::memory_peak_through_case: the peak was read, the child stopped
  bool markers_out_of_order = false;   // its case markers were not 0, 1, 2, ... (something else wrote them)
  std::vector<CaseMemory> case_memory;  // ChildSpec::memory_peak_through_case, case by case, in order
  bool process_cap_hit = false;  // a fork or thread creation was refused
  bool output_exceeded = false;  // stopped at the output limit
  bool abandoned = false;        // the deferred request never came: killed before it ran anything asked of it
  bool forked = false;           // a zygote's child (zygote.h), not a freshly started program
  bool ended_unasked = false;    // it ended on its own before its deferred request arrived

  bool exited_cleanly() const { return started && !timed_out && term_signal == 0 && exit_code == 0; }
  std::string describe_end() const;  // "exit status 3", "killed by signal 11 (Segmentation fault)", ...
};

struct ChildSpec {
  std::vector<std::string> argv;       // argv[0] is an absolute path
  std::vector<std::string> extra_env;  // NAME=value, added to a minimal environment
  std::string working_dir;
  std::string request;          // written to fd 3 in the child; empty: fd 3 is closed
  // Instead of `request`: a request that becomes known later (the child is
  // started early, to load its libraries while the parent still works). The
  // wall-clock limit counts from its arrival; nullopt abandons the child
  // (killed, ChildOutcome::abandoned).
  std::shared_future<std::optional<std::string>> deferred_request;
  int request_wake_fd = -1;  // readable once deferred_request is ready (else it is polled for)
  bool request_by_path = false;  // the child opens its request by name (/dev/fd/3), not only through fd 3
  bool result_channel = false;  // give the child fd 4 to write its results to
  // Given the result channel's bytes so far, the step under way and its
  // limit; nullopt: none now (the whole run's limits still hold). With a
  // deferred request, set before the request is given (EarlyChild::finish).
  std::function<std::optional<StepLimit>(const std::string& result)> step_limit;
  // NUL-terminated arguments argv[0] reads from fd 5 (bwrap --args 5), so
  // that no command line a sandboxed process can read holds them.
  std::string launcher_args;
  ChildLimits limits;
  bool use_cgroup = false;           // run it in its own cgroup (memory, processes, CPU time)
  // ChildOutcome::memory_peak_bytes is the cgroup's peak from the runner's
  // ready marker (wire::kRunnerReady, before any learner code loads; what is
  // held then counts) through case N of its request: read when the runner
  // begins case N + 1 (or its results are whole), and the runner is then
  // stopped (ChildOutcome::measured_through_case). The request is the graded
  // run's, whole: nothing in it tells the code it will be stopped. Case
  // markers out of order (code that wrote into the channel) end the
  // measurement (ChildOutcome::markers_out_of_order).
  std::optional<size_t> memory_peak_through_case;
  // Where the result channel's bytes say the run stands (set with
  // memory_peak_through_case: the wire format is the caller's).
  std::function<RunStage(const std::string& result)> run_stage;
  bool drop_to_nobody = false;       // switch to user and group 65534 before exec (the grader runs as root)
  bool signal_in_exit_code = false;  // argv[0] reports a child's death by signal N as exit status 128+N (bwrap)
  // Given to the child as fd 3 instead of a request (a zygote's control
  // socket); run_child closes it once the child has it.
  int fd3 = -1;
  // Called with the child's pid once it is started (not for a zygote's child).
  std::function<void(pid_t)> started;
  // Where set, the child is forked by this zygote (zygote.h) and loads
  // `zygote_object`; `argv` (a fresh runner) runs where the zygote is gone.
  std::shared_ptr<Zygote> zygote;
  std::string zygote_object;
  // Processes the command in argv runs besides the one that does the work
  // (bwrap's two), which a zygote's child has not: its cgroup's process cap
  // is lowered by them, so both count the same.
  int wrapper_processes = 0;
};

// Makes this process the one that inherits what its children leave orphaned
// (called once at the grader's start), and reaps those that have ended, never
// a child some run_child is waiting for. run_child calls it after each child.
void become_subreaper();
void reap_orphans();
// fork() for a command of the warm grader (warm/server.h), which this process
// then waits for itself: registered before the reaper (reap_orphans) can see
// it end, until release_child. Taken while no other thread is between a
// fork and its registration here (the lock run_child forks under), so the
// child never inherits that lock held; the child starts with no children of
// its own on record (a stop there kills only what it started itself).
pid_t fork_command();
void release_child(pid_t pid);
// Kills every child run_child is waiting for, with its process group (a grade
// stopped from outside: stop.h).
void kill_active_children();

// Never throws for anything the child does; throws GraderFault if the grader
// cannot create pipes, a cgroup it was asked for, or fork.
ChildOutcome run_child(const ChildSpec& spec);

// A child started before its request is known, to load what it needs while
// the parent still works (ChildSpec::deferred_request, set here): run_child
// on a thread of its own. Destroyed without a request, it is abandoned
// (killed, and waited for). With a ChildSpec::zygote, which has loaded
// everything already, nothing starts before the request: finish forks it.
class EarlyChild {
 public:
  explicit EarlyChild(ChildSpec spec);
  ~EarlyChild();
  EarlyChild(const EarlyChild&) = delete;
  EarlyChild& operator=(const EarlyChild&) = delete;

  // Still running and waiting for its request (not ended on its own).
  bool waiting() const;
  // Sends the request (its wall-clock limit starts now) and waits for the
  // child to end, with `step_limit` (ChildSpec::step_limit) if given. Once.
  ChildOutcome finish(std::string request,
                      std::function<std::optional<StepLimit>(const std::string&)> step_limit = nullptr);

 private:
  void wake();
  std::unique_ptr<ChildSpec> spec_;  // run_child reads it until the child ends
  std::promise<std::optional<std::string>> request_;
  std::future<ChildOutcome> outcome_;
  int wake_ = -1;  // an eventfd: the request is ready (the wait, perhaps hours in grade watch, does not poll)
  bool sent_ = false;
};

}  // namespace grader
