#include "judge/zygote.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <map>

#include "base/errors.h"
#include "base/fd_passing.h"
#include "base/profile.h"

namespace grader {
namespace {

// How long a zygote that is still loading LibTorch may take to answer its first spawn.
constexpr double kFirstAnswerSeconds = 60;

// The child's hello and the credentials the kernel attached to it.
bool receive_hello(int socket, double wait_seconds, zygote::Hello& hello, pid_t& pid) {
  pollfd ready{socket, POLLIN, 0};
  const int wait_ms = static_cast<int>(std::ceil(wait_seconds * 1000));
  int polled;
  do {
    polled = poll(&ready, 1, wait_ms);
  } while (polled < 0 && errno == EINTR);
  if (polled <= 0) return false;
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(ucred))];
  iovec part{&hello, sizeof hello};
  msghdr message{};
  message.msg_iov = &part;
  message.msg_iovlen = 1;
  message.msg_control = control;
  message.msg_controllen = sizeof control;
  if (recvmsg(socket, &message, MSG_DONTWAIT | MSG_CMSG_CLOEXEC) != static_cast<ssize_t>(sizeof hello)) return false;
  if (hello.tag != zygote::Hello{}.tag) return false;
  for (cmsghdr* header = CMSG_FIRSTHDR(&message); header; header = CMSG_NXTHDR(&message, header)) {
    if (header->cmsg_level == SOL_SOCKET && header->cmsg_type == SCM_CREDENTIALS) {
      ucred credentials;
      std::memcpy(&credentials, CMSG_DATA(header), sizeof credentials);
      pid = credentials.pid;
      return pid > 0;
    }
  }
  return false;
}

}  // namespace

Zygote::Zygote(ChildSpec spec, std::string view_key, std::string stamps)
    : origin_(spec), view_key_(std::move(view_key)), stamps_(std::move(stamps)),
      spec_(std::make_unique<ChildSpec>(std::move(spec))) {
  int pair[2];
  if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, pair) != 0) {
    throw GraderFault(std::string("cannot create the runner zygote's socket: ") + std::strerror(errno));
  }
  control_ = pair[0];
  spec_->fd3 = pair[1];
  spec_->started = [this](pid_t pid) { pid_ = pid; };
  outcome_ = std::async(std::launch::async, [this] {
    struct Ended {  // also when run_child throws
      std::atomic<bool>& ended;
      ~Ended() { ended = true; }
    } mark{ended_};
    return run_child(*spec_);  // it closes fd3, the zygote's end of the socket
  });
}

Zygote::~Zygote() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (control_ >= 0) close(control_);
    control_ = -1;
  }
  // It ends at once once its children have; one that does not is killed
  // (still run_child's child, unreaped: its pid is its own).
  if (outcome_.valid() && outcome_.wait_for(std::chrono::seconds(5)) != std::future_status::ready && pid_ > 0) {
    kill(-pid_, SIGKILL);
    kill(pid_, SIGKILL);
  }
  try {
    outcome_.get();
  } catch (...) {  // it could not be started: nothing to stop
  }
}

bool Zygote::alive() const { return !broken_ && !ended_; }

std::optional<Zygote::Child> Zygote::spawn(const zygote::SpawnRequest& request, const int (&given)[zygote::kFdCount],
                                           double wait_seconds) {
  std::lock_guard<std::mutex> lock(mutex_);
  profile::Span span("fork a runner from the zygote (after its LibTorch load)");
  if (broken_ || ended_ || control_ < 0) return std::nullopt;
  int pair[2];
  if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, pair) != 0) {
    throw GraderFault(std::string("cannot create a runner's status socket: ") + std::strerror(errno));
  }
  const int on = 1;
  setsockopt(pair[0], SOL_SOCKET, SO_PASSCRED, &on, sizeof on);
  int fds[zygote::kFdCount];
  std::copy(std::begin(given), std::end(given), fds);
  fds[zygote::kStatus] = pair[1];
  const bool sent = send_with_fds(control_, &request, sizeof request, fds, zygote::kFdCount);
  close(pair[1]);
  Child child;
  child.status_fd = pair[0];
  zygote::Hello hello;
  if (!sent || !receive_hello(child.status_fd, std::max(wait_seconds, kFirstAnswerSeconds), hello, child.pid)) {
    // Gone, or stuck: not used again (a child it forks late finds its status socket closed and ends).
    broken_ = true;
    close(child.status_fd);
    return std::nullopt;
  }
  child.inherited_anon_bytes = hello.inherited_anon_bytes;
  child.start_cpu_seconds = std::clamp(hello.start_cpu_seconds, 0.0, 60.0);
  child.pidfd = static_cast<int>(syscall(SYS_pidfd_open, child.pid, 0));
  if (child.pidfd < 0) {
    // Not this kernel (before 5.3): not used; the child waits for a go that never comes.
    broken_ = true;
    close(child.status_fd);
    return std::nullopt;
  }
  return child;
}

namespace {

std::mutex zygotes_mutex;
std::function<void(std::shared_ptr<Zygote>)> replaced_keeper;
// Never destroyed at exit (the threads they run on must not outlive what
// they use): close_zygotes ends them.
// By the view a zygote was started in; with the stamps of the files it loaded
// (a rebuild replaces it).
auto* zygotes = new std::map<std::string, std::pair<std::shared_ptr<Zygote>, std::string>>();

}  // namespace

std::shared_ptr<Zygote> zygote_for(const std::string& view_key, const std::string& stamps,
                                   const std::function<ChildSpec()>& start) {
  if (!zygotes_enabled()) return nullptr;
  std::shared_ptr<Zygote> replaced;  // ended outside the lock (it may take moments)
  std::unique_lock<std::mutex> lock(zygotes_mutex);
  auto& [zygote, seen] = (*zygotes)[view_key];
  if (!zygote || !zygote->alive() || seen != stamps) {
    replaced = std::move(zygote);
    zygote = std::make_shared<Zygote>(start(), view_key, stamps);
    seen = stamps;
  }
  auto chosen = zygote;
  auto keeper = replaced_keeper;
  lock.unlock();
  if (replaced && keeper) keeper(std::move(replaced));
  replaced.reset();
  return chosen;
}

std::shared_ptr<Zygote> current_zygote(const std::shared_ptr<Zygote>& held) {
  if (!held || held->alive()) return held;
  {
    // A successor started since, for newer stamps too: it runs what a fresh
    // runner started now would (the rebuilt files).
    std::lock_guard<std::mutex> lock(zygotes_mutex);
    auto found = zygotes->find(held->view_key_);
    if (found != zygotes->end() && found->second.first && found->second.first->alive()) return found->second.first;
  }
  return zygote_for(held->view_key_, held->stamps_, [&held] { return held->origin_; });
}

bool zygotes_enabled() {
  const char* fresh = std::getenv("GRADER_FRESH_RUNNERS");
  return !(fresh && std::string(fresh) == "1");
}

void keep_replaced_zygotes(std::function<void(std::shared_ptr<Zygote>)> keeper) {
  std::lock_guard<std::mutex> lock(zygotes_mutex);
  replaced_keeper = std::move(keeper);
}

void borrow_zygotes_after_fork() {
  // One thread here (the fork's): nobody else holds the registry's lock.
  // Held for this process's life, so that no destructor of theirs (which
  // would wait for a thread that is the parent's) ever runs here.
  static auto* borrowed = new std::vector<std::shared_ptr<Zygote>>();
  for (auto& entry : *zygotes) {
    if (entry.second.first) borrowed->push_back(entry.second.first);
  }
  replaced_keeper = nullptr;  // the parent's keeper: what this process replaces is its own to end
}

void close_zygotes() {
  std::map<std::string, std::pair<std::shared_ptr<Zygote>, std::string>> ending;
  {
    std::lock_guard<std::mutex> lock(zygotes_mutex);
    ending.swap(*zygotes);
  }
}

}  // namespace grader
