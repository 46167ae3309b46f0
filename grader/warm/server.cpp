#include "warm/server.h"

#include <fcntl.h>
#include <pthread.h>
#include <poll.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "base/command_clock.h"
#include "base/profile.h"
#include "judge/process.h"
#include "judge/zygote.h"

namespace grader::warm {
namespace {

using Clock = std::chrono::steady_clock;

int stop_pipe[2] = {-1, -1};

void on_stop(int) { (void)!write(stop_pipe[1], "s", 1); }

// The program file this server runs, as it was at the start: a rebuild
// writes a new one, and the server is then stale.
struct ProgramFile {
  std::string path;
  dev_t dev = 0;
  ino_t ino = 0;
  timespec written{};

  static ProgramFile of_self() {
    ProgramFile file;
    char path[4096];
    const ssize_t n = readlink("/proc/self/exe", path, sizeof path - 1);
    if (n <= 0) return file;
    file.path.assign(path, static_cast<size_t>(n));
    struct stat st {};
    if (stat(file.path.c_str(), &st) == 0) {
      file.dev = st.st_dev;
      file.ino = st.st_ino;
      file.written = st.st_mtim;
    }
    return file;
  }

  bool changed() const {
    struct stat st {};
    return path.empty() || stat(path.c_str(), &st) != 0 || st.st_dev != dev || st.st_ino != ino ||
           st.st_mtim.tv_sec != written.tv_sec || st.st_mtim.tv_nsec != written.tv_nsec;
  }
};

// One command handed over: the process running it, and the client's connection.
struct Command {
  pid_t pid = -1;
  int pidfd = -1;
  int client = -1;  // -1 once the client has gone
};

double idle_limit_seconds() {
  const char* given = std::getenv("GRADE_WARM_IDLE");
  if (given && *given) {
    char* end = nullptr;
    const double value = std::strtod(given, &end);
    if (end != given && *end == '\0' && value > 0) return value;
  }
  return 600;
}

// In the forked process: become the command and run it. Never returns.
[[noreturn]] void run_command(const Request& request, std::vector<int> streams, const std::vector<int>& others,
                              const ServerHooks& hooks) {
  for (int fd : others) close(fd);
  for (int signal : {SIGINT, SIGTERM, SIGHUP, SIGPIPE, SIGCHLD}) ::signal(signal, SIG_DFL);
  sigset_t none;
  sigemptyset(&none);
  sigprocmask(SIG_SETMASK, &none, nullptr);
  for (int i = 0; i < 3; ++i) {
    if (streams[static_cast<size_t>(i)] != i) dup2(streams[static_cast<size_t>(i)], i);
  }
  for (int fd : streams) {
    if (fd > 2) close(fd);
  }
  umask(static_cast<mode_t>(request.umask));
  if (chdir(request.working_dir.c_str()) != 0) {
    dprintf(2, "grade: cannot enter %s: %s\n", request.working_dir.c_str(), std::strerror(errno));
    std::_Exit(2);
  }
  clearenv();
  for (const auto& var : request.env) putenv(strdup(var.c_str()));
  // The command's start was the client's (the same pid as the grade script):
  // this process now stands for it.
  if (const char* by = std::getenv("GRADE_STARTED_PID"); by && std::to_string(request.client_pid) == by) {
    setenv("GRADE_STARTED_PID", std::to_string(getpid()).c_str(), 1);
  }
  restart_command_clock();
  profile::restart();
  borrow_zygotes_after_fork();
  std::vector<char*> argv;
  for (const auto& arg : request.argv) argv.push_back(const_cast<char*>(arg.c_str()));
  argv.push_back(nullptr);
  const int code = hooks.run(static_cast<int>(request.argv.size()), argv.data());
  std::fflush(nullptr);
  std::_Exit(code);
}

class Server {
 public:
  Server(std::string folder, const ServerHooks& hooks) : folder_(std::move(folder)), hooks_(hooks) {}

  int run(int ready_fd) {
    if (!private_folder(folder_)) {
      std::fprintf(stderr, "grade --warm-server: the folder %s is not this user's alone\n", folder_.c_str());
      return 1;  // no note written there
    }
    const std::string path = socket_in(folder_);
    if (path.empty()) return fail("the build folder's path is too long for a socket");
    // One server per folder: the lock is held for the server's life.
    lock_ = open((folder_ + "/lock").c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    if (lock_ < 0 || flock(lock_, LOCK_EX | LOCK_NB) != 0) return 0;  // another one serves
    const int probe = static_cast<int>(syscall(SYS_pidfd_open, getpid(), 0));
    if (probe < 0 && errno == ENOSYS) return fail("this kernel has no pidfd_open (Linux 5.3)", true);
    if (probe < 0) return fail(std::string("pidfd_open: ") + std::strerror(errno));
    close(probe);
    listener_ = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_un address{};
    address.sun_family = AF_UNIX;
    std::strncpy(address.sun_path, path.c_str(), sizeof address.sun_path - 1);
    unlink(path.c_str());  // a dead server's (the lock says none is alive)
    if (listener_ < 0 || bind(listener_, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0 ||
        listen(listener_, 16) != 0) {
      return fail(std::string("cannot listen on ") + path + ": " + std::strerror(errno));
    }
    socket_path_ = path;
    struct stat st {};
    if (stat(path.c_str(), &st) == 0) socket_ino_ = st.st_ino;
    if (ready_fd >= 0) {
      (void)!write(ready_fd, "1", 1);
      close(ready_fd);
    }
    serve();
    stop_listening();
    return 0;
  }

 private:
  // Where it never can (`lasting`), a server says so in the folder: clients
  // stop starting one (and paying its LibTorch load) until the grader is rebuilt.
  int fail(const std::string& why, bool lasting = false) {
    std::fprintf(stderr, "grade --warm-server: %s\n", why.c_str());
    if (lasting) say_unavailable(folder_, why);
    return 1;
  }

  bool socket_is_ours() const {
    struct stat st {};
    return stat(socket_path_.c_str(), &st) == 0 && st.st_ino == socket_ino_;
  }

  // Takes no more commands; a successor may start at once (the lock is
  // released) while the commands under way end here.
  void stop_listening() {
    if (listener_ < 0) return;
    close(listener_);
    listener_ = -1;
    // Only this server's socket: a successor may have bound its own meanwhile.
    if (socket_is_ours()) unlink(socket_path_.c_str());
    close(lock_);
    lock_ = -1;
  }

  void serve() {
    const double idle_limit = idle_limit_seconds();
    auto idle_since = Clock::now();
    bool stopping = false;
    while (true) {
      if (stopping && listener_ >= 0) stop_listening();
      // A socket removed or replaced (its build folder deleted): nobody can reach this server.
      if (listener_ >= 0 && !socket_is_ours()) stopping = true;
      if (commands_.empty()) {
        retired_.clear();  // zygotes a rebuild replaced: no command of this server uses them any more
        if (stopping) return;
        if (std::chrono::duration<double>(Clock::now() - idle_since).count() >= idle_limit) return;
      }
      reap_unwatched();
      std::vector<pollfd> fds;
      fds.push_back({stop_pipe[0], POLLIN, 0});
      if (listener_ >= 0) fds.push_back({listener_, POLLIN, 0});
      bool unwatched = false;
      for (const auto& command : commands_) {
        if (command.pidfd >= 0) fds.push_back({command.pidfd, POLLIN, 0});
        unwatched |= command.pidfd < 0;
        if (command.client >= 0) fds.push_back({command.client, POLLIN, 0});
      }
      if (poll(fds.data(), fds.size(), unwatched ? 100 : 1000) < 0 && errno != EINTR) return;
      for (const auto& fd : fds) {
        if (!fd.revents) continue;
        if (fd.fd == stop_pipe[0]) {
          stopping = true;
        } else if (fd.fd == listener_) {
          if (!accept_one()) stopping = true;  // stale: the next command starts a new server
        } else {
          follow(fd.fd);
        }
      }
      if (!commands_.empty()) idle_since = Clock::now();
    }
  }

  // Takes one command; false where this server is stale (refused: the client runs it itself).
  bool accept_one() {
    const int client = accept4(listener_, nullptr, nullptr, SOCK_CLOEXEC);
    if (client < 0) return true;
    ucred peer{};
    socklen_t size = sizeof peer;
    if (getsockopt(client, SOL_SOCKET, SO_PEERCRED, &peer, &size) != 0 || peer.uid != geteuid()) {
      close(client);
      return true;
    }
    timeval patience{5, 0};
    setsockopt(client, SOL_SOCKET, SO_RCVTIMEO, &patience, sizeof patience);
    std::string bytes;
    std::vector<int> streams;
    auto request = receive_request(client, bytes, streams, 3) && streams.size() == 3 ? decode(bytes) : std::nullopt;
    if (!request) {
      for (int fd : streams) close(fd);
      close(client);
      return true;
    }
    const bool stale = program_.changed();
    if (stale) {
      for (int fd : streams) close(fd);
      write_all(client, &kRefused, 1);
      close(client);
      return false;
    }
    timeval forever{0, 0};
    setsockopt(client, SOL_SOCKET, SO_RCVTIMEO, &forever, sizeof forever);
    try {
      if (hooks_.warm_up) hooks_.warm_up(*request);
    } catch (...) {  // warming is an optimisation: the command decides
    }
    std::vector<int> others = {listener_, lock_, client, stop_pipe[0], stop_pipe[1]};
    for (const auto& command : commands_) {
      others.push_back(command.pidfd);
      if (command.client >= 0) others.push_back(command.client);
    }
    // The server's stop handler must not run in the command before it has its
    // own: a signal the client forwards at once stays pending until then.
    sigset_t stops, before;
    sigemptyset(&stops);
    for (int signal : {SIGINT, SIGTERM, SIGHUP}) sigaddset(&stops, signal);
    pthread_sigmask(SIG_BLOCK, &stops, &before);
    const pid_t pid = fork_command();
    if (pid == 0) run_command(*request, streams, others, hooks_);
    pthread_sigmask(SIG_SETMASK, &before, nullptr);
    for (int fd : streams) close(fd);
    if (pid < 0) {
      close(client);
      return true;
    }
    // Without a pidfd (out of descriptors) its end is polled for (reap_unwatched).
    Command command{pid, static_cast<int>(syscall(SYS_pidfd_open, pid, 0)), client};
    write_all(client, &kAccepted, 1);
    commands_.push_back(command);
    return true;
  }

  // Something on a command's descriptors: its end, or its client's signal or departure.
  void follow(int fd) {
    for (size_t i = 0; i < commands_.size(); ++i) {
      auto& command = commands_[i];
      if (fd == command.client) {
        unsigned char signal = 0;
        const ssize_t n = read(command.client, &signal, 1);
        if (n == 1 && (signal == SIGINT || signal == SIGTERM || signal == SIGHUP)) {
          kill(command.pid, signal);
        } else if (n <= 0) {
          // The client is gone (killed): the command stops as it would on SIGHUP.
          kill(command.pid, SIGHUP);
          close(command.client);
          command.client = -1;
        }
        return;
      }
      if (fd == command.pidfd) {
        int status = 0;
        if (waitpid(command.pid, &status, 0) == command.pid) end(i, status);
        return;
      }
    }
  }

  // Commands whose end no pidfd announces.
  void reap_unwatched() {
    for (size_t i = 0; i < commands_.size(); ++i) {
      int status = 0;
      if (commands_[i].pidfd < 0 && waitpid(commands_[i].pid, &status, WNOHANG) == commands_[i].pid) {
        end(i--, status);
      }
    }
  }

  // Command i ended with `status`: its client is told, and it is forgotten.
  void end(size_t i, int status) {
    auto& command = commands_[i];
    if (command.client >= 0) {
      const auto message = WIFSIGNALED(status) ? status_message(kSignalled, WTERMSIG(status))
                                               : status_message(kExited, WEXITSTATUS(status));
      write_all(command.client, message.data(), message.size());
      close(command.client);
    }
    release_child(command.pid);
    if (command.pidfd >= 0) close(command.pidfd);
    commands_.erase(commands_.begin() + static_cast<std::ptrdiff_t>(i));
  }

  std::string folder_;
  const ServerHooks& hooks_;
  ProgramFile program_ = ProgramFile::of_self();
  int lock_ = -1, listener_ = -1;
  std::string socket_path_;
  ino_t socket_ino_ = 0;
  std::vector<Command> commands_;
  std::vector<std::shared_ptr<Zygote>> retired_;  // replaced while commands ran (keep_replaced_zygotes)

 public:
  void retire(std::shared_ptr<Zygote> zygote) { retired_.push_back(std::move(zygote)); }
};

}  // namespace

int serve(const std::string& folder, int ready_fd, const ServerHooks& hooks) {
  if (pipe2(stop_pipe, O_CLOEXEC | O_NONBLOCK) != 0) return 1;
  struct sigaction action {};
  action.sa_handler = on_stop;
  sigemptyset(&action.sa_mask);
  action.sa_flags = SA_RESTART;
  for (int signal : {SIGINT, SIGTERM, SIGHUP}) sigaction(signal, &action, nullptr);
  std::signal(SIGPIPE, SIG_IGN);
  Server server(folder, hooks);
  keep_replaced_zygotes([&server](std::shared_ptr<Zygote> zygote) { server.retire(std::move(zygote)); });
  const int code = server.run(ready_fd);
  keep_replaced_zygotes(nullptr);
  close_zygotes();
  return code;
}

}  // namespace grader::warm
