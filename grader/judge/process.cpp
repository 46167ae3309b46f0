#include "judge/process.h"

#include <fcntl.h>
#include <grp.h>
#include <poll.h>
#include <signal.h>
#include <sys/eventfd.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <set>

#include "base/errors.h"
#include "judge/sandbox.h"
#include "judge/stall.h"
#include "judge/stop.h"
#include "judge/zygote.h"

namespace grader {
namespace {

using Clock = std::chrono::steady_clock;

struct Pipe {
  int read = -1;
  int write = -1;
};

Pipe make_pipe() {
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) throw GraderFault(std::string("cannot create a pipe: ") + std::strerror(errno));
  return {fds[0], fds[1]};
}

void close_fd(int& fd) {
  if (fd >= 0) close(fd);
  fd = -1;
}

void set_limit(int resource, rlim_t value, rlim_t hard_extra = 0) {
  rlimit limit{value, value + hard_extra};
  setrlimit(resource, &limit);
}

// Writes process `pid` to a cgroup's procs file (async-signal-safe: a forked
// child writes its own, the grader a zygote's child's).
bool join_cgroup(const char* procs_file, pid_t pid) {
  char digits[24];
  int length = 0;
  for (; pid > 0 && length < 23; pid /= 10) digits[length++] = static_cast<char>('0' + pid % 10);
  char text[24];
  for (int i = 0; i < length; ++i) text[i] = digits[length - 1 - i];
  int fd = open(procs_file, O_WRONLY | O_CLOEXEC);
  if (fd < 0) return false;
  bool ok = write(fd, text, static_cast<size_t>(length)) == length;
  close(fd);
  return ok;
}

// Runs in the forked child: only async-signal-safe calls until execve.
[[noreturn]] void exec_child(const ChildSpec& spec, char* const* argv, char* const* envp, int in_fd, int out_fd,
                             int err_fd, int request_fd, int result_fd, int args_fd,
                             const std::vector<const char*>& cgroup_procs, pid_t parent) {
  signal(SIGPIPE, SIG_DFL);  // the grader ignores it; the child should not
  sigset_t none;             // and it starts with no signal blocked
  sigemptyset(&none);
  sigprocmask(SIG_SETMASK, &none, nullptr);
  setsid();                  // its own process group, so a timeout kills grandchildren too
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (getppid() != parent) _exit(127);  // the grader died before this point
  for (const char* procs : cgroup_procs) {
    if (!join_cgroup(procs, getpid())) _exit(125);
  }
  const auto& limits = spec.limits;
  // The soft limit sends SIGXCPU (reported as a timeout); the hard one, 2 s later, kills.
  set_limit(RLIMIT_CPU, static_cast<rlim_t>(std::ceil(limits.cpu_seconds)), 2);
  set_limit(RLIMIT_FSIZE, limits.file_size_bytes);
  set_limit(RLIMIT_CORE, 0);
  if (limits.address_space_bytes > 0) set_limit(RLIMIT_AS, limits.address_space_bytes);

  // Move every descriptor into place; the pipes are O_CLOEXEC, dup2 clears it.
  // A source that already sits on a low number (another thread of the grader
  // closed 3 just before these pipes were made) is lifted out of the way
  // first: dup2 onto itself would keep O_CLOEXEC, and a later dup2 could
  // overwrite it.
  auto lift = [](int fd) { return fd >= 0 && fd < 10 ? fcntl(fd, F_DUPFD_CLOEXEC, 10) : fd; };
  in_fd = lift(in_fd);
  out_fd = lift(out_fd);
  err_fd = lift(err_fd);
  request_fd = lift(request_fd);
  result_fd = lift(result_fd);
  args_fd = lift(args_fd);
  dup2(in_fd, 0);
  dup2(out_fd, 1);
  dup2(err_fd, 2);
  if (request_fd >= 0) dup2(request_fd, 3);
  if (result_fd >= 0) dup2(result_fd, 4);
  if (args_fd >= 0) dup2(args_fd, 5);
  // Nothing else of the grader's reaches the child: with --jobs, another
  // thread may hold files open (cgroup limits, sources) at the moment of fork.
  if (request_fd < 0) close(3);
  if (result_fd < 0) close(4);
  if (args_fd < 0) close(5);
  if (syscall(SYS_close_range, 6u, ~0u, 0u) != 0) {
    for (int fd = 6; fd < 65536; ++fd) close(fd);
  }
  if (!spec.working_dir.empty() && chdir(spec.working_dir.c_str()) != 0) _exit(127);
  if (spec.drop_to_nobody) {
    // A pipe is its creator's (mode 0600): the child may reopen its request's by name only as its owner.
    if (spec.request_by_path && request_fd >= 0 && fchown(3, kNobody, kNobody) != 0) _exit(125);
    if (setgroups(0, nullptr) != 0 || setgid(kNobody) != 0 || setuid(kNobody) != 0) _exit(125);
  }
  prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0);
  execve(argv[0], argv, envp);
  _exit(127);
}

void drain(int& fd, std::string& into, size_t cap, bool& truncated) {
  char buffer[65536];
  ssize_t got = read(fd, buffer, sizeof(buffer));
  if (got > 0) {
    size_t room = into.size() < cap ? cap - into.size() : 0;
    size_t keep = std::min(room, static_cast<size_t>(got));
    into.append(buffer, keep);
    if (keep < static_cast<size_t>(got)) truncated = true;
  } else if (got == 0 || (errno != EAGAIN && errno != EINTR)) {
    close_fd(fd);
  }
}

// The children run_child is waiting for, by pid: the orphan reaper leaves
// them to their own thread. Held across fork, so a child that ends at once is
// registered before the reaper can see it.
std::mutex children_mutex;
std::set<pid_t> active_children;
// The pidfds of the runners forked from a zygote that run_child waits for: a
// stop kills them by these (their zygote may be another process's, the warm
// grader's, which the stop leaves alone).
std::set<int> active_forked;

// A child of spec.zygote that loads spec.zygote_object with the pipes given,
// put in its cgroup (`cgroup`, made here with the limits a fresh runner's has)
// and told to go. Its pid is not held for it once the zygote reaps it: a stop
// kills it by its pidfd (active_forked). nullopt, with nothing started: there
// is no zygote that answers (a fresh runner is started instead).
std::optional<Zygote::Child> start_in_zygote(const ChildSpec& spec, Pipe& out, Pipe& err, Pipe& request,
                                             Pipe& result, std::unique_ptr<Cgroup>& cgroup, ChildOutcome& outcome) {
  const int object = open(spec.zygote_object.c_str(), O_RDONLY | O_CLOEXEC);
  if (object < 0) return std::nullopt;  // the fresh runner's loader will say why
  zygote::SpawnRequest ask;
  ask.cpu_seconds = static_cast<uint32_t>(std::ceil(spec.limits.cpu_seconds));
  ask.file_size_bytes = spec.limits.file_size_bytes;
  ask.address_space_bytes = spec.limits.address_space_bytes;
  std::snprintf(ask.object_name, sizeof ask.object_name, "%s", spec.zygote_object.c_str());
  int fds[zygote::kFdCount];
  fds[zygote::kStatus] = -1;  // made by spawn
  fds[zygote::kStdout] = out.write;
  fds[zygote::kStderr] = err.write;
  fds[zygote::kRequest] = request.read;
  fds[zygote::kResult] = result.write;
  fds[zygote::kObject] = object;
  {
    std::lock_guard<std::mutex> lock(children_mutex);
    if (stop_requested()) {
      close(object);
      throw GraderFault("the grade was stopped");  // nothing new once a stop began (stop.h)
    }
  }
  // A zygote that ended since the grade was prepared (found out here, or
  // already known) gives way to its successor.
  std::optional<Zygote::Child> child;
  for (int tries = 0; tries < 2 && !child; ++tries) {
    auto zygote = current_zygote(spec.zygote);
    if (!zygote) break;
    child = zygote->spawn(ask, fds, spec.limits.wall_seconds);
  }
  close(object);
  if (!child) return std::nullopt;
  // A stop from here on kills it by its pidfd (kill_active_children), before
  // it is told to go too.
  bool stopped = false;
  {
    std::lock_guard<std::mutex> lock(children_mutex);
    stopped = stop_requested();
    if (!stopped) active_forked.insert(child->pidfd);
  }
  auto refuse = [&](const std::string& why) {
    {
      std::lock_guard<std::mutex> lock(children_mutex);
      active_forked.erase(child->pidfd);
    }
    syscall(SYS_pidfd_send_signal, child->pidfd, SIGKILL, nullptr, 0);
    close(child->status_fd);
    close(child->pidfd);
    throw GraderFault(why);
  };
  if (stopped) refuse("the grade was stopped");
  if (spec.use_cgroup) {
    // A fresh runner's cgroup holds LibTorch's start (the private memory the
    // child shares with the zygote) and the sandbox's own processes: the
    // child's limits leave room for neither, so both count the same.
    auto limits = Cgroup::Limits{spec.limits.memory_bytes, spec.limits.processes};
    if (limits.memory_bytes) {
      limits.memory_bytes = limits.memory_bytes > child->inherited_anon_bytes + (64u << 20)
                                ? limits.memory_bytes - child->inherited_anon_bytes
                                : (64u << 20);
    }
    if (limits.processes) limits.processes = std::max(1, limits.processes - spec.wrapper_processes);
    std::string why;
    cgroup = Cgroup::create(limits, &why);
    if (!cgroup) {
      refuse("cannot create a cgroup for the child: " + why);
    }
    for (const auto& file : cgroup->procs_files()) {
      if (!join_cgroup(file.c_str(), child->pid)) {
        refuse("cannot move the runner's child into its cgroup (" + file + "): " + std::strerror(errno));
      }
    }
    outcome.in_cgroup = true;
  }
  // Unsent only where it has ended already (its zygote went): the zygote's
  // report, or its absence, then says how.
  (void)send(child->status_fd, &zygote::kGo, 1, MSG_NOSIGNAL);
  return child;
}

// Whether the zygote reported `child`'s end (its wait status into `status`);
// `block`: waits for it (after a kill: moments). A zygote that ended without
// reporting marks the child lost.
bool zygote_reported(Zygote::Child& child, int& status, bool block) {
  if (block) {
    pollfd ready{child.status_fd, POLLIN, 0};
    for (int round = 0; round < 100 && poll(&ready, 1, 100) == 0; ++round) {
    }
  }
  int32_t code = 0;
  const ssize_t got = recv(child.status_fd, &code, sizeof code, MSG_DONTWAIT);
  if (got == static_cast<ssize_t>(sizeof code)) {
    status = code;
    return true;
  }
  if (got == 0 || (got < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) || block) {
    child.lost = true;
    status = SIGKILL;  // what the zygote's end did to it (its parent-death signal)
    return true;
  }
  return false;
}

}  // namespace

void become_subreaper() { prctl(PR_SET_CHILD_SUBREAPER, 1); }

void kill_active_children() {
  std::lock_guard<std::mutex> lock(children_mutex);
  for (pid_t pid : active_children) {
    kill(-pid, SIGKILL);  // each leads its own process group (setsid)...
    kill(pid, SIGKILL);   // ...once it has called setsid
  }
  for (int pidfd : active_forked) syscall(SYS_pidfd_send_signal, pidfd, SIGKILL, nullptr, 0);
}

pid_t fork_command() {
  std::lock_guard<std::mutex> lock(children_mutex);
  const pid_t pid = fork();
  if (pid == 0) {
    active_children.clear();  // the server's zygotes and other commands are not this one's
    active_forked.clear();
  } else if (pid > 0) {
    active_children.insert(pid);
  }
  return pid;
}

void release_child(pid_t pid) {
  std::lock_guard<std::mutex> lock(children_mutex);
  active_children.erase(pid);
}

void reap_orphans() {
  std::lock_guard<std::mutex> lock(children_mutex);
  while (true) {
    siginfo_t info{};
    if (waitid(P_ALL, 0, &info, WEXITED | WNOHANG | WNOWAIT) != 0 || info.si_pid == 0) return;
    if (active_children.count(info.si_pid)) return;  // its own thread reaps it; the rest wait for the next call
    waitpid(info.si_pid, nullptr, WNOHANG);
  }
}

std::string ChildOutcome::describe_end() const {
  if (!started) return "could not be started";
  if (cpu_exceeded) return "stopped at the CPU-time limit";
  if (timed_out) return "stopped at the time limit";
  if (output_exceeded) return "stopped at the output limit";
  if (term_signal != 0) {
    const char* name = strsignal(term_signal);
    return "killed by signal " + std::to_string(term_signal) + (name ? std::string(" (") + name + ")" : "");
  }
  return "exit status " + std::to_string(exit_code);
}

namespace {

// One run of a child: its channels, its start, the watch over it until it
// ends or a limit stops it, and its end, each a method; what they share is
// here. run_child runs them in order.
class ChildRun {
 public:
  explicit ChildRun(const ChildSpec& spec) : spec_(spec), deferred_(spec.deferred_request.valid()) {}

  ChildOutcome run() {
    if (spec_.argv.empty()) throw GraderFault("run_child: empty command");
    open_channels();
    start();
    watch();
    end();
    read_status();
    return outcome_;
  }

 private:
  static constexpr size_t kNoStep = static_cast<size_t>(-1);

  // The child's standard streams, its request and result channels, and the
  // sandbox launcher's arguments (written whole before the fork: the pipe
  // holds them, grown where needed, and the reader finds their end at once).
  void open_channels() {
    devnull_ = open("/dev/null", O_RDONLY | O_CLOEXEC);
    out_ = make_pipe();
    err_ = make_pipe();
    if (!spec_.request.empty() || deferred_) {
      request_ = make_pipe();
    } else if (spec_.fd3 >= 0) {
      request_.read = spec_.fd3;  // handed over: closed below once the child has it
    }
    if (spec_.result_channel) result_ = make_pipe();
    if (spec_.launcher_args.empty()) return;
    args_ = make_pipe();
    const auto size = static_cast<int>(spec_.launcher_args.size());
    if (size >= 65536 && fcntl(args_.write, F_SETPIPE_SZ, size + 1) < size + 1) {
      close_fd(args_.read);
      close_fd(args_.write);
      throw GraderFault("the sandbox's arguments do not fit a pipe (" + std::to_string(size) + " bytes)");
    }
    if (write(args_.write, spec_.launcher_args.data(), spec_.launcher_args.size()) != size) {
      close_fd(args_.read);
      close_fd(args_.write);
      throw GraderFault(std::string("cannot pass the sandbox its arguments: ") + std::strerror(errno));
    }
    close_fd(args_.write);
  }

  // Forked by a zygote where there is one that still answers, else forked and
  // executed here, in a cgroup of its own where the spec asks for one.
  void start() {
    std::vector<std::string> env_storage = {"PATH=/usr/local/bin:/usr/bin:/bin", "LANG=C.UTF-8",
                                            "OMP_NUM_THREADS=1", "MKL_NUM_THREADS=1", "OPENBLAS_NUM_THREADS=1"};
    env_storage.insert(env_storage.end(), spec_.extra_env.begin(), spec_.extra_env.end());
    std::vector<char*> argv, envp;
    for (const auto& arg : spec_.argv) argv.push_back(const_cast<char*>(arg.c_str()));
    argv.push_back(nullptr);
    for (const auto& entry : env_storage) envp.push_back(const_cast<char*>(entry.c_str()));
    envp.push_back(nullptr);

    std::vector<const char*> cgroup_procs;
    if (spec_.zygote && !deferred_ && request_.read >= 0 && result_.write >= 0) {
      forked_ = start_in_zygote(spec_, out_, err_, request_, result_, cgroup_, outcome_);  // registered there
    }
    if (!forked_ && spec_.use_cgroup) {
      std::string why;
      cgroup_ = Cgroup::create({spec_.limits.memory_bytes, spec_.limits.processes}, &why);
      if (!cgroup_) throw GraderFault("cannot create a cgroup for the child: " + why);
      for (const auto& file : cgroup_->procs_files()) cgroup_procs.push_back(file.c_str());
      outcome_.in_cgroup = true;
    }
    start_ = Clock::now();
    if (forked_) {
      pid_ = forked_->pid;  // in its cgroup, and running
      outcome_.forked = true;
    } else {
      const pid_t parent = getpid();
      std::unique_lock<std::mutex> registering(children_mutex);
      if (stop_requested()) throw GraderFault("the grade was stopped");  // nothing new once a stop began (stop.h)
      pid_ = fork();
      if (pid_ < 0) throw GraderFault(std::string("cannot fork: ") + std::strerror(errno));
      if (pid_ == 0) {
        exec_child(spec_, argv.data(), envp.data(), devnull_, out_.write, err_.write, request_.read, result_.write,
                   args_.read, cgroup_procs, parent);
      }
      active_children.insert(pid_);
      registering.unlock();
      if (spec_.started) spec_.started(pid_);
      // Also from this side, so the group exists before any kill below.
      setpgid(pid_, pid_);
    }
    outcome_.started = true;
    close(devnull_);
    close_fd(out_.write);
    close_fd(err_.write);
    close_fd(request_.read);
    close_fd(result_.write);
    close_fd(args_.read);
    for (int fd : {out_.read, err_.read, request_.write, result_.read}) {
      if (fd >= 0) fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
    }
    wall_ = std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(spec_.limits.wall_seconds));
    deadline_ = start_ + wall_;
    run_base_ = start_;
    // The cgroup's threads (a sandboxed runner is bwrap's grandchild), else the
    // child's own; and the thread that watches it, which a busy machine holds
    // back too (it reads the results and sees the child end).
    stall_.emplace([group = cgroup_.get(), pid = pid_] {
      auto threads = group ? group->threads() : threads_of(pid);
      threads.push_back(static_cast<pid_t>(syscall(SYS_gettid)));
      return threads;
    });
    // A deferred request: nothing to write, and no wall clock, until it arrives.
    request_text_ = spec_.request;
    waiting_for_request_ = deferred_;
    // A zygote's child's CPU counts LibTorch's start, as a fresh runner's does.
    cpu_before_ = forked_ ? forked_->start_cpu_seconds : 0;
  }

  // A zygote's child is not ours to wait for: the zygote sends its wait status.
  void check_ended(bool block) {
    if (reaped_) return;
    if (!forked_) {
      reaped_ = waitpid(pid_, &status_, block ? 0 : WNOHANG) == pid_;
      return;
    }
    reaped_ = zygote_reported(*forked_, status_, block);
  }

  // A deferred request that has arrived is taken, and the wall clock starts;
  // false where it never will (the run is abandoned).
  bool take_deferred_request() {
    if (!waiting_for_request_ ||
        spec_.deferred_request.wait_for(std::chrono::seconds(0)) != std::future_status::ready) {
      return true;
    }
    waiting_for_request_ = false;
    auto text = spec_.deferred_request.get();
    if (!text) {
      outcome_.abandoned = true;
      return false;
    }
    request_text_ = std::move(*text);
    if (request_text_.empty()) close_fd(request_.write);
    run_base_ = Clock::now();
    run_stall_base_ = stall_->seconds();
    deadline_ = run_base_ + wall_;
    return true;
  }

  // ChildSpec::memory_peak_through_case: the cgroup's peak counted from the
  // ready marker (before any learner code loads) through that case; true
  // once read (or given up), which stops the child: what it does after, its
  // ending included, is not counted. Where the peak can be restarted, each
  // case's own too (ChildOutcome::case_memory): restarted when the grade sees
  // the case begin, read when it sees the next one begin. Cases that begin
  // and end between two reads of the channel share a window, whose figures
  // each of them is given; the run's peak is the most of its windows'.
  bool follow_memory_peak() {
    if (!spec_.memory_peak_through_case || !spec_.run_stage || !cgroup_) return false;
    if (peak_taken_) return true;
    // Read again only when the channel has grown (the loop wakes every few ms).
    if (outcome_.result.size() == stage_seen_) return false;
    stage_seen_ = outcome_.result.size();
    const auto stage = spec_.run_stage(outcome_.result);
    if (!stage.ready) return false;
    const bool windows = cgroup_->can_reset_memory_peak();
    auto restart = [&](std::optional<size_t> index) {
      cgroup_->reset_memory_peak();
      window_case_ = index;
      window_start_ = cgroup_->memory_usage_bytes().value_or(0);
    };
    // The window open since `window_case_` began, closed when the grade sees
    // case `next` begin: every case begun in it (several, when some began and
    // ended between two reads) is given its figures.
    auto close_window = [&](std::optional<size_t> next) {
      const auto peak = cgroup_->memory_peak_bytes();
      if (peak) run_peak_ = std::max(run_peak_, *peak);
      if (!windows || !peak) return;
      // The window before the first marker (the runner's start-up) holds the
      // cases begun before the grade first saw one.
      if (!window_case_ && !(next && *next > 0)) return;
      const size_t first = window_case_ ? *window_case_ : 0;
      const size_t last = next && *next > first ? *next - 1 : first;
      for (size_t index = first; index <= last; ++index) {
        outcome_.case_memory.push_back({index, window_start_, *peak});
      }
    };
    if (!peak_reset_) {
      peak_reset_ = true;
      restart(std::nullopt);
    }
    // The runner writes 0, 1, 2, ...: any other count was written by someone else.
    if (stage.case_markers != (stage.last_started ? *stage.last_started + 1 : 0)) {
      outcome_.markers_out_of_order = true;
      peak_taken_ = true;
      return true;
    }
    const size_t through = *spec_.memory_peak_through_case;
    const bool done = stage.results_whole || (stage.last_started && *stage.last_started > through);
    bool closed = false;
    if (windows && stage.last_started != window_case_) {
      close_window(stage.last_started);
      closed = true;
      if (!done) restart(stage.last_started);
    }
    if (!done) return false;
    if (!closed) close_window(std::nullopt);  // the last case's window (or, without windows, the whole run's)
    peak_taken_ = true;
    if (run_peak_ > 0) outcome_.memory_peak_bytes = run_peak_;
    outcome_.measured_through_case = true;
    return true;
  }

  // The step under way (ChildSpec::step_limit), read off the result channel
  // as it grows: a new step gets its own deadline from `now`.
  void follow_steps(Clock::time_point now) {
    // (step_limit is set with a deferred request: read only once it has arrived.)
    if (waiting_for_request_ || !spec_.step_limit || outcome_.result.size() == result_seen_) return;
    result_seen_ = outcome_.result.size();
    const auto limit = spec_.step_limit(outcome_.result);
    if (!limit) {
      step_ = kNoStep;
      step_deadline_ = Clock::time_point::max();
    } else if (step_ != limit->step) {
      step_ = limit->step;
      step_deadline_ = now + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(limit->seconds));
      step_seconds_ = limit->seconds;
      step_base_ = now;
      step_stall_base_ = stall_->seconds();
    }
  }

  // Whether `limit` seconds counted from `base` are spent by `now`. The time
  // the child waited for a CPU since then (stall.h) is not its own: it moves
  // `deadline` later instead, up to the wall-clock backstop.
  bool spent(Clock::time_point now, Clock::time_point base, double stall_base, double limit,
             Clock::time_point& deadline) {
    if (now < deadline) return false;
    const double allowed = wall_allowance(limit, stall_->seconds() - stall_base);
    const auto moved = base + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(allowed));
    if (moved <= now) return true;
    deadline = moved;
    return false;
  }

  // Whether a limit stops the run now (the outcome says which).
  bool limit_reached(Clock::time_point now) {
    if (!waiting_for_request_ && spent(now, run_base_, run_stall_base_, spec_.limits.wall_seconds, deadline_)) {
      outcome_.timed_out = !reaped_;
      return true;
    }
    follow_steps(now);
    if (follow_memory_peak()) return true;  // measured: stopped, not a limit
    if (!reaped_ && step_ != kNoStep && spent(now, step_base_, step_stall_base_, step_seconds_, step_deadline_)) {
      outcome_.timed_out = true;
      outcome_.step_limit_seconds = step_seconds_;
      return true;
    }
    // The cgroup's CPU counter covers every thread and process of the child
    // (before a deferred request arrives no learner code has run: not read).
    if (cgroup_ && !reaped_ && !waiting_for_request_ &&
        cgroup_->cpu_seconds() + cpu_before_ > spec_.limits.cpu_seconds) {
      outcome_.cpu_exceeded = outcome_.timed_out = true;
      return true;
    }
    if (spec_.limits.stop_at_output_limit && (outcome_.stdout_truncated || outcome_.stderr_truncated)) {
      outcome_.output_exceeded = true;
      return true;
    }
    return false;
  }

  // Waits for the child's streams (or its end, or the request's arrival) and
  // moves what is ready: the request out, its output in. False: nothing more
  // will come.
  bool exchange(Clock::time_point now) {
    std::vector<pollfd> fds;
    for (int fd : {out_.read, err_.read, result_.read}) {
      if (fd >= 0) fds.push_back({fd, POLLIN, 0});
    }
    if (request_.write >= 0 && !waiting_for_request_) fds.push_back({request_.write, POLLOUT, 0});
    if (forked_ && !reaped_) {
      fds.push_back({forked_->status_fd, POLLIN, 0});
      fds.push_back({forked_->pidfd, POLLIN, 0});  // its exit wakes the loop, whatever its zygote does
    }
    const auto next_deadline = std::min(deadline_, step_deadline_);
    int wait_ms =
        static_cast<int>(std::chrono::duration_cast<std::chrono::milliseconds>(next_deadline - now).count()) + 1;
    wait_ms = std::min(wait_ms, reaped_ ? 100 : 50);
    if (waiting_for_request_) {
      // Woken by the request's arrival, or by the child's streams closing as it ends.
      const bool woken = spec_.request_wake_fd >= 0 && !fds.empty();
      if (woken) fds.push_back({spec_.request_wake_fd, POLLIN, 0});
      wait_ms = woken ? 1000 : 5;
    }
    int ready = poll(fds.data(), fds.size(), wait_ms);
    if (ready < 0 && errno != EINTR) return false;
    if (ready == 0 && reaped_) return false;  // exited, and nothing more is coming
    for (const auto& entry : fds) {
      if (entry.revents == 0) continue;
      if (entry.fd == request_.write) {
        ssize_t wrote =
            write(request_.write, request_text_.data() + request_sent_, request_text_.size() - request_sent_);
        if (wrote > 0) request_sent_ += static_cast<size_t>(wrote);
        if (wrote < 0 && errno != EAGAIN && errno != EINTR) close_fd(request_.write);
        if (request_sent_ == request_text_.size()) close_fd(request_.write);
      } else if (entry.fd == out_.read) {
        drain(out_.read, outcome_.stdout_text, spec_.limits.output_bytes, outcome_.stdout_truncated);
      } else if (entry.fd == err_.read) {
        drain(err_.read, outcome_.stderr_text, spec_.limits.output_bytes, outcome_.stderr_truncated);
      } else if (entry.fd == result_.read) {
        drain(result_.read, outcome_.result, spec_.limits.result_bytes, outcome_.result_truncated);
      }  // request_wake_fd: stays readable; the request is taken at the top of the loop
    }
    return true;
  }

  // Until the child has ended and said everything, or a limit stops it.
  void watch() {
    while (true) {
      check_ended(false);
      // A forked child that has exited (its pidfd says so) has finished its run:
      // its wait status comes through its zygote, which may lag behind, and a
      // zygote's stall must not turn a finished run into a timeout. Waited for
      // (zygote_reported's bound); a zygote that never says is the grader's fault.
      if (forked_ && !reaped_) {
        pollfd exited{forked_->pidfd, POLLIN, 0};
        if (poll(&exited, 1, 0) > 0) check_ended(true);
      }
      if (!take_deferred_request()) break;
      const bool streams_open = out_.read >= 0 || err_.read >= 0 || result_.read >= 0;
      // Once the child has exited, grandchildren may still hold the pipes: they
      // are killed below, so stop reading when nothing more arrives.
      if (reaped_ && !streams_open) break;
      const auto now = Clock::now();
      if (limit_reached(now)) break;
      if (!exchange(now)) break;
    }
    outcome_.ended_unasked = waiting_for_request_;  // the loop ended before the request came
  }

  // Whatever happened, nothing of the child's process group (nor of its
  // cgroup, which also holds what left the group) outlives the run.
  void end() {
    // A run measured through its last case may have ended before the loop read
    // its channel a last time.
    if (spec_.memory_peak_through_case && !peak_taken_ && cgroup_) {
      stage_seen_ = outcome_.result.size() + 1;
      (void)follow_memory_peak();
    }
    if (forked_) {
      // By its pidfd: once reaped, its pid may be another process's. It never
      // forks (its filter), and its cgroup holds whatever else it started.
      if (!reaped_) {
        syscall(SYS_pidfd_send_signal, forked_->pidfd, SIGKILL, nullptr, 0);
        check_ended(true);
      }
    } else {
      kill(-pid_, SIGKILL);
      if (!reaped_) {
        kill(pid_, SIGKILL);
        waitpid(pid_, &status_, 0);
      }
    }
    if (cgroup_) {
      cgroup_->kill_all();
      outcome_.cpu_seconds = cgroup_->cpu_seconds() + cpu_before_;
      outcome_.memory_exceeded = cgroup_->oom_kills() > 0;
      if (!peak_taken_ && !spec_.memory_peak_through_case) outcome_.memory_peak_bytes = cgroup_->memory_peak_bytes();
      outcome_.process_cap_hit = cgroup_->process_cap_hits() > 0;
      if (outcome_.cpu_seconds > spec_.limits.cpu_seconds) outcome_.cpu_exceeded = outcome_.timed_out = true;
    }
    for (int* fd : {&out_.read, &err_.read, &request_.write, &result_.read}) close_fd(*fd);
    if (!forked_) {
      std::lock_guard<std::mutex> lock(children_mutex);
      active_children.erase(pid_);
    } else {
      {
        std::lock_guard<std::mutex> lock(children_mutex);
        active_forked.erase(forked_->pidfd);
      }
      close(forked_->status_fd);
      close(forked_->pidfd);
      if (forked_->lost) throw GraderFault("the runner's zygote ended while it ran a submission (see: grade sandbox)");
    }
    // What it left behind (bwrap's process in its namespace, grandchildren) is
    // the grader's now, and dead: the cgroup is empty, the group killed.
    reap_orphans();
    outcome_.wall_seconds = std::chrono::duration<double>(Clock::now() - start_).count();
    outcome_.stalled_seconds = stall_->seconds();
  }

  // The wait status, as the outcome says it.
  void read_status() {
    if (WIFEXITED(status_)) outcome_.exit_code = WEXITSTATUS(status_);
    if (WIFSIGNALED(status_)) outcome_.term_signal = WTERMSIG(status_);
    // (A zygote's child is read the same way: exit status 152 means what it
    // would have meant from a fresh runner.)
    if (spec_.signal_in_exit_code && outcome_.exit_code > 128 && outcome_.exit_code <= 128 + 64) {
      outcome_.term_signal = outcome_.exit_code - 128;
      outcome_.exit_code = -1;
    }
    if (outcome_.timed_out || outcome_.output_exceeded) outcome_.term_signal = 0;
    // The kernel's CPU limit ends a process with SIGXCPU (or SIGKILL past the hard limit).
    if (outcome_.term_signal == SIGXCPU) outcome_.timed_out = true;
  }

  const ChildSpec& spec_;
  const bool deferred_;
  ChildOutcome outcome_;
  int devnull_ = -1;
  Pipe out_, err_, request_, result_, args_;
  std::unique_ptr<Cgroup> cgroup_;
  bool peak_reset_ = false, peak_taken_ = false;  // follow_memory_peak
  std::optional<size_t> window_case_;             // the case whose window is open
  uint64_t window_start_ = 0, run_peak_ = 0;
  size_t stage_seen_ = 0;                         // the result's size when run_stage last read it
  std::optional<Zygote::Child> forked_;  // a zygote's child, where one forked it
  pid_t pid_ = -1;
  Clock::time_point start_;
  Clock::duration wall_{};
  Clock::time_point deadline_;
  Clock::time_point run_base_, step_base_;      // where the run's and the step's limits count from
  double run_stall_base_ = 0, step_stall_base_ = 0;  // the meter's reading then
  std::optional<StallMeter> stall_;
  std::string request_text_;
  size_t request_sent_ = 0;
  bool waiting_for_request_ = false;
  int status_ = 0;
  bool reaped_ = false;
  size_t step_ = kNoStep;  // the step under way (ChildSpec::step_limit), and until when
  Clock::time_point step_deadline_ = Clock::time_point::max();
  double step_seconds_ = 0;
  size_t result_seen_ = 0;
  double cpu_before_ = 0;
};

}  // namespace

ChildOutcome run_child(const ChildSpec& spec) { return ChildRun(spec).run(); }

EarlyChild::EarlyChild(ChildSpec spec) : spec_(std::make_unique<ChildSpec>(std::move(spec))) {
  // A zygote's child starts in moments: it is forked when the request comes
  // (the zygote is what loads LibTorch early).
  if (spec_->zygote) return;
  spec_->deferred_request = request_.get_future().share();
  wake_ = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  spec_->request_wake_fd = wake_;  // without one (-1), the wait polls
  outcome_ = std::async(std::launch::async, [spec = spec_.get()] { return run_child(*spec); });
}

EarlyChild::~EarlyChild() {
  if (!sent_ && !spec_->zygote) {
    request_.set_value(std::nullopt);
    wake();
    try {
      outcome_.get();
    } catch (...) {  // a fault starting it: nothing left to stop
    }
  }
  if (wake_ >= 0) close(wake_);
}

void EarlyChild::wake() {
  const uint64_t one = 1;
  if (wake_ >= 0) {
    [[maybe_unused]] auto ignored = write(wake_, &one, sizeof one);
  }
}

bool EarlyChild::waiting() const {
  if (spec_->zygote) return !sent_ && spec_->zygote->alive();
  return !sent_ && outcome_.wait_for(std::chrono::seconds(0)) != std::future_status::ready;
}

ChildOutcome EarlyChild::finish(std::string request,
                                std::function<std::optional<StepLimit>(const std::string&)> step_limit) {
  if (sent_) throw GraderFault("EarlyChild::finish called twice");
  sent_ = true;
  spec_->step_limit = std::move(step_limit);  // read by run_child once the request is there
  if (spec_->zygote) {
    spec_->request = std::move(request);
    return run_child(*spec_);
  }
  request_.set_value(std::move(request));
  wake();
  return outcome_.get();
}

}  // namespace grader
