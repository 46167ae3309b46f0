#include "runner/zygote.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <string>

#include "judge/zygote_protocol.h"
#include "runner/library_files.h"

namespace grader {
namespace {

using zygote::Fd;

constexpr int kControl = 3;

// One spawn request and its descriptors; false on the control socket's end
// (the grader is done) or a broken message (its descriptors closed).
bool receive(zygote::SpawnRequest& request, int (&fds)[zygote::kFdCount], bool& ended) {
  ended = false;
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int) * zygote::kFdCount)];
  iovec data{&request, sizeof request};
  msghdr message{};
  message.msg_iov = &data;
  message.msg_iovlen = 1;
  message.msg_control = control;
  message.msg_controllen = sizeof control;
  ssize_t got = recvmsg(kControl, &message, MSG_CMSG_CLOEXEC);
  if (got == 0 || (got < 0 && errno != EINTR && errno != EAGAIN)) {
    ended = true;
    return false;
  }
  int count = 0;
  for (cmsghdr* header = CMSG_FIRSTHDR(&message); header; header = CMSG_NXTHDR(&message, header)) {
    if (header->cmsg_level != SOL_SOCKET || header->cmsg_type != SCM_RIGHTS) continue;
    const int n = static_cast<int>((header->cmsg_len - CMSG_LEN(0)) / sizeof(int));
    for (int i = 0; i < n; ++i) {
      int fd;
      std::memcpy(&fd, CMSG_DATA(header) + i * sizeof(int), sizeof fd);
      if (count < zygote::kFdCount) {
        fds[count++] = fd;
      } else {
        close(fd);
      }
    }
  }
  const bool whole = got == static_cast<ssize_t>(sizeof request) && request.magic == zygote::kMagic &&
                     count == zygote::kFdCount && (message.msg_flags & (MSG_TRUNC | MSG_CTRUNC)) == 0;
  if (!whole) {
    for (int i = 0; i < count; ++i) close(fds[i]);
    std::fprintf(stderr, "grader-runner: a malformed spawn request was ignored\n");
  }
  request.object_name[sizeof request.object_name - 1] = '\0';
  return whole;
}

// This process's private memory (RssAnon of /proc/self/status), in bytes.
uint64_t anonymous_bytes() {
  std::ifstream status("/proc/self/status");
  std::string key;
  while (status >> key) {
    if (key == "RssAnon:") {
      uint64_t kib = 0;
      status >> kib;
      return kib * 1024;
    }
    status.ignore(4096, '\n');
  }
  return 0;
}

void set_limit(int resource, rlim_t value, rlim_t hard_extra = 0) {
  rlimit limit{value, value + hard_extra};
  setrlimit(resource, &limit);
}

// The forked child: made what a fresh runner is at its main, then the runner.
[[noreturn]] void become_runner(const zygote::SpawnRequest& request, int (&fds)[zygote::kFdCount], bool filter,
                                pid_t zygote_pid, double start_cpu_seconds) {
  signal(SIGCHLD, SIG_DFL);
  sigset_t none;
  sigemptyset(&none);
  sigprocmask(SIG_SETMASK, &none, nullptr);
  setsid();  // its own process group, as a fresh runner's
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (getppid() != zygote_pid) _exit(125);
  // Every descriptor to its place: 0 /dev/null, 1 stdout, 2 stderr, 3 request,
  // 4 result channel, 5 the object, 6 the status socket (closed before the runner).
  const int devnull = open("/dev/null", O_RDONLY | O_CLOEXEC);
  int lifted[zygote::kFdCount];
  for (int i = 0; i < zygote::kFdCount; ++i) lifted[i] = fcntl(fds[i], F_DUPFD_CLOEXEC, 10);
  const int null_lifted = fcntl(devnull, F_DUPFD_CLOEXEC, 10);
  for (int i = 0; i < zygote::kFdCount; ++i) {
    if (lifted[i] < 0) _exit(125);
  }
  if (null_lifted < 0 || dup2(null_lifted, 0) < 0 || dup2(lifted[Fd::kStdout], 1) < 0 ||
      dup2(lifted[Fd::kStderr], 2) < 0 || dup2(lifted[Fd::kRequest], 3) < 0 || dup2(lifted[Fd::kResult], 4) < 0 ||
      dup2(lifted[Fd::kObject], 5) < 0 || dup2(lifted[Fd::kStatus], 6) < 0) {
    _exit(125);
  }
  // 7: the prepared Landlock ruleset, where there is one (library_files.h).
  const int first_closed = move_libtorch_refusal(7) == 7 ? 8 : 7;
  if (syscall(SYS_close_range, static_cast<unsigned>(first_closed), ~0u, 0u) != 0) {
    for (int fd = first_closed; fd < 65536; ++fd) close(fd);
  }
  constexpr int kStatusFd = 6;
  zygote::Hello hello;
  hello.inherited_anon_bytes = anonymous_bytes();
  hello.start_cpu_seconds = start_cpu_seconds;
  if (send(kStatusFd, &hello, sizeof hello, MSG_NOSIGNAL) != static_cast<ssize_t>(sizeof hello)) _exit(125);
  char go = 0;
  if (recv(kStatusFd, &go, 1, 0) != 1 || go != zygote::kGo) _exit(125);
  close(kStatusFd);

  // Its CPU limit less the zygote's start, which a fresh runner spends under its own.
  set_limit(RLIMIT_CPU, static_cast<rlim_t>(std::max(1.0, std::ceil(request.cpu_seconds - start_cpu_seconds))), 2);
  set_limit(RLIMIT_FSIZE, request.file_size_bytes);
  set_limit(RLIMIT_CORE, 0);
  if (request.address_space_bytes > 0) set_limit(RLIMIT_AS, request.address_space_bytes);
  prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0);
  const int status = run_submission("/proc/self/fd/5", request.object_name, filter, 5);
  std::exit(status);
}

}  // namespace

int serve_as_zygote(bool filter) {
  // Once, for every runner it forks (library_files.h).
  prepare_libtorch_refusal();
  // What loading LibTorch cost this process, up to here.
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  const double start_cpu_seconds = static_cast<double>(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) +
                                   static_cast<double>(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) / 1e6;
  sigset_t child_ended;
  sigemptyset(&child_ended);
  sigaddset(&child_ended, SIGCHLD);
  sigprocmask(SIG_BLOCK, &child_ended, nullptr);
  const int ended_fd = signalfd(-1, &child_ended, SFD_CLOEXEC | SFD_NONBLOCK);
  if (ended_fd < 0) {
    std::fprintf(stderr, "grader-runner: cannot watch for ended children: %s\n", std::strerror(errno));
    return 70;
  }
  fcntl(kControl, F_SETFD, FD_CLOEXEC);
  const pid_t self = getpid();
  std::map<pid_t, int> status_socket;  // each running child's, for its wait status
  auto reap = [&status_socket] {
    int status = 0;
    for (pid_t pid; (pid = waitpid(-1, &status, WNOHANG)) > 0;) {
      auto found = status_socket.find(pid);
      if (found == status_socket.end()) continue;
      const int32_t code = status;
      [[maybe_unused]] auto sent = send(found->second, &code, sizeof code, MSG_NOSIGNAL);
      close(found->second);
      status_socket.erase(found);
    }
  };
  bool open = true;
  while (open || !status_socket.empty()) {
    pollfd watched[2] = {{ended_fd, POLLIN, 0}, {open ? kControl : -1, POLLIN, 0}};
    if (poll(watched, 2, -1) < 0) {
      if (errno == EINTR) continue;
      return 70;
    }
    if (watched[0].revents) {
      signalfd_siginfo info;
      while (read(ended_fd, &info, sizeof info) > 0) {
      }
      reap();
    }
    if (!open || watched[1].revents == 0) continue;
    zygote::SpawnRequest request;
    int fds[zygote::kFdCount];
    bool ended = false;
    if (!receive(request, fds, ended)) {
      if (ended) open = false;  // the grader is done; the children still running end as it ends them
      continue;
    }
    const pid_t pid = fork();
    if (pid == 0) {
      close(kControl);
      close(ended_fd);
      become_runner(request, fds, filter, self, start_cpu_seconds);
    }
    if (pid > 0) {
      status_socket[pid] = fds[Fd::kStatus];
    } else {
      close(fds[Fd::kStatus]);  // the grader reads its end's close as "not started"
    }
    for (int i = 0; i < zygote::kFdCount; ++i) {
      if (i != Fd::kStatus) close(fds[i]);
    }
  }
  return 0;
}

}  // namespace grader
