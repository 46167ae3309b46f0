// grader-client: what the grade script runs for a command of the grader
// (warm/server.h). It hands the command, with its terminal, folder and
// environment, to this user's warm grader of the build folder (starting one
// where none runs), forwards Ctrl-C, and exits as the command did. Where
// there is no warm grader to be had (GRADE_WARM=off, a path too long for a
// socket, a server that will not start or refuses) it runs the grader
// itself: the same command, as if it had never been here (GRADE_WARM=required,
// for tests: it fails instead). Links no LibTorch: it starts in a millisecond.
//
//   grader-client BUILD_DIR GRADER [ARGUMENTS...]
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "warm/protocol.h"

extern char** environ;

namespace {

using namespace grader::warm;

char** grader_argv = nullptr;
bool required = false;  // GRADE_WARM=required
int signal_pipe[2] = {-1, -1};

[[noreturn]] void end_as(char kind, int value);

[[noreturn]] void run_it_here() {
  if (required) {
    std::fprintf(stderr, "grade: GRADE_WARM=required, and no warm grader took the command\n");
    std::_Exit(3);
  }
  // A Ctrl-C that came meanwhile ends this command rather than starting it here.
  unsigned char which = 0;
  if (signal_pipe[0] >= 0 && read(signal_pipe[0], &which, 1) == 1) end_as(kSignalled, which);
  execv(grader_argv[0], grader_argv);
  std::fprintf(stderr, "grade: cannot run %s: %s\n", grader_argv[0], std::strerror(errno));
  std::_Exit(3);
}

int connect_to(const std::string& path) {
  const int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  std::strncpy(address.sun_path, path.c_str(), sizeof address.sun_path - 1);
  if (connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0) {
    close(fd);
    return -1;
  }
  return fd;
}

// Starts the warm grader, detached from this terminal and session, and waits
// until it listens (or has given up). True where it said it listens.
bool start_server(const std::string& folder) {
  int ready[2];
  if (pipe2(ready, O_CLOEXEC) != 0) return false;
  const pid_t middle = fork();
  if (middle < 0) return false;
  if (middle == 0) {
    // Twice forked: the server is nobody's child here, and outlives this command.
    setsid();
    if (fork() != 0) std::_Exit(0);
    // Nothing of this command's descriptors (a terminal, a test harness's
    // pipes) stays open in the server: 0-2 are /dev/null, 3 the ready pipe.
    const int null = open("/dev/null", O_RDWR);
    for (int fd = 0; fd < 3; ++fd) dup2(null, fd);
    if (ready[1] == 3) {
      fcntl(3, F_SETFD, 0);  // dup2 onto itself would leave it close-on-exec
    } else {
      dup2(ready[1], 3);  // not close-on-exec
    }
    if (syscall(SYS_close_range, 4u, ~0u, 0u) != 0) {
      for (int fd = 4; fd < 65536; ++fd) close(fd);
    }
    std::vector<std::string> args = {grader_argv[0], "--warm-server", folder, "--ready-fd", "3"};
    std::vector<char*> argv;
    for (auto& arg : args) argv.push_back(arg.data());
    argv.push_back(nullptr);
    // Not the command's start: the server's own life begins here.
    unsetenv("GRADE_STARTED");
    unsetenv("GRADE_STARTED_PID");
    unsetenv("GRADE_EXECED");
    execv(argv[0], argv.data());
    std::_Exit(127);
  }
  close(ready[1]);
  waitpid(middle, nullptr, 0);
  char byte = 0;
  ssize_t n;
  do {
    n = read(ready[0], &byte, 1);
  } while (n < 0 && errno == EINTR);
  close(ready[0]);
  return n == 1;
}

void on_signal(int signal) {
  const unsigned char which = static_cast<unsigned char>(signal);
  (void)!write(signal_pipe[1], &which, 1);
}

// Ends as the command ended: its status, or its signal (a shell loop around
// the grade sees a Ctrl-C as one).
[[noreturn]] void end_as(char kind, int value) {
  if (kind == kSignalled) {
    ::signal(value, SIG_DFL);
    sigset_t just;
    sigemptyset(&just);
    sigaddset(&just, value);
    sigprocmask(SIG_UNBLOCK, &just, nullptr);
    kill(getpid(), value);
    std::_Exit(128 + value);
  }
  std::_Exit(value);
}

// Whether a server said it cannot serve here since the grader was last built.
bool said_unavailable(const std::string& folder) {
  struct stat note {}, grader {};
  if (stat(unavailable_in(folder).c_str(), &note) != 0 || stat(grader_argv[0], &grader) != 0) return false;
  return note.st_mtim.tv_sec > grader.st_mtim.tv_sec ||
         (note.st_mtim.tv_sec == grader.st_mtim.tv_sec && note.st_mtim.tv_nsec >= grader.st_mtim.tv_nsec);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: grader-client BUILD_DIR GRADER [ARGUMENTS...]\n");
    return 2;
  }
  grader_argv = argv + 2;
  const char* wanted = std::getenv("GRADE_WARM");
  if (wanted && (std::strcmp(wanted, "off") == 0 || std::strcmp(wanted, "0") == 0)) run_it_here();
  required = wanted && std::strcmp(wanted, "required") == 0;
  // A write to a server that has just gone must not kill this process.
  ::signal(SIGPIPE, SIG_IGN);
  // Ctrl-C and its kin from now on: kept until the command runs somewhere.
  if (pipe2(signal_pipe, O_CLOEXEC | O_NONBLOCK) != 0) run_it_here();
  struct sigaction action {};
  action.sa_handler = on_signal;
  sigemptyset(&action.sa_mask);
  action.sa_flags = SA_RESTART;
  for (int signal : {SIGINT, SIGTERM, SIGHUP}) sigaction(signal, &action, nullptr);
  char here[4096];
  if (!getcwd(here, sizeof here)) run_it_here();
  // GRADE_WARM_DIR: another folder for the socket (a test's own server).
  const char* given_folder = std::getenv("GRADE_WARM_DIR");
  std::string folder = given_folder && *given_folder ? given_folder : folder_for(argv[1], geteuid());
  if (folder.front() != '/') folder = std::string(here) + "/" + folder;
  const std::string path = socket_in(folder);
  // Where the folder cannot be this user's alone (a build folder this user may
  // not write), there is no warm grader, and none is started to find that out.
  if (path.empty() || !private_folder(folder) || said_unavailable(folder)) run_it_here();

  int server = connect_to(path);
  if (server < 0) {
    if (!start_server(folder)) run_it_here();
    server = connect_to(path);
    if (server < 0) run_it_here();
  }

  Request request;
  request.client_pid = getpid();
  request.working_dir = here;
  const mode_t mask = umask(0);
  umask(mask);
  request.umask = mask;
  for (int i = 2; i < argc; ++i) {
    // A path to one of this process's descriptors (`--output json=>(jq .)`)
    // names another file in the server's command: such a command runs here.
    const std::string arg = argv[i];
    if (arg.find("/dev/fd/") != std::string::npos || arg.find("/proc/self/fd/") != std::string::npos) {
      run_it_here();
    }
    request.argv.push_back(arg);
  }
  for (char** var = environ; *var; ++var) request.env.emplace_back(*var);
  const int streams[3] = {0, 1, 2};
  if (!send_with_fds(server, encode(request), streams, 3)) run_it_here();
  char answer = 0;
  ssize_t n;
  do {
    n = read(server, &answer, 1);
  } while (n < 0 && errno == EINTR);
  if (n != 1 || answer != kAccepted) run_it_here();  // stale, or gone: nothing ran there

  // From here the command runs there: Ctrl-C and its kin (those that came
  // already too) are passed on.
  std::string status;
  while (true) {
    pollfd fds[2] = {{server, POLLIN, 0}, {signal_pipe[0], POLLIN, 0}};
    if (poll(fds, 2, -1) < 0) {
      if (errno == EINTR) continue;
      break;
    }
    if (fds[1].revents & POLLIN) {
      unsigned char which = 0;
      while (read(signal_pipe[0], &which, 1) == 1) write_all(server, &which, 1);
    }
    if (fds[0].revents) {
      char buffer[8];
      const ssize_t got = read(server, buffer, sizeof buffer);
      if (got < 0 && errno == EINTR) continue;
      if (got <= 0) break;
      status.append(buffer, static_cast<size_t>(got));
      if (status.size() >= 5) break;
    }
  }
  char kind = 0;
  int value = 0;
  if (!parse_status(status.substr(0, 5), kind, value)) {
    std::fprintf(stderr, "grade: the warm grader ended before this command did (GRADE_WARM=off runs without it)\n");
    return 3;
  }
  end_as(kind, value);
}
