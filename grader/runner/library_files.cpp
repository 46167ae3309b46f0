#include "runner/library_files.h"

#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
#include <link.h>
#include <linux/landlock.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <set>

namespace grader {
namespace {

std::string real_path(const std::string& path) {
  char resolved[PATH_MAX];
  if (!realpath(path.c_str(), resolved)) return "";
  return resolved;
}

std::string parent_of(const std::string& path) {
  const auto slash = path.rfind('/');
  return slash == 0 || slash == std::string::npos ? "/" : path.substr(0, slash);
}

std::string joined(const std::string& dir, const char* name) { return dir == "/" ? "/" + std::string(name) : dir + "/" + name; }

}  // namespace

std::vector<std::string> loaded_library_files(const std::vector<std::string>& prefixes) {
  struct Search {
    const std::vector<std::string>* prefixes;
    std::set<std::string> found;
  } search{&prefixes, {}};
  dl_iterate_phdr(
      [](dl_phdr_info* info, size_t, void* data) {
        auto* search = static_cast<Search*>(data);
        if (!info->dlpi_name || !*info->dlpi_name) return 0;
        const std::string path = real_path(info->dlpi_name);
        if (path.empty()) return 0;
        const auto base = path.substr(path.rfind('/') + 1);
        for (const auto& prefix : *search->prefixes) {
          if (base.compare(0, prefix.size(), prefix) == 0) search->found.insert(path);
        }
        return 0;
      },
      &search);
  return {search.found.begin(), search.found.end()};
}

static bool allow_reading(int ruleset, int fd) {
  landlock_path_beneath_attr rule{};
  rule.parent_fd = fd;
  // A file takes only the rights of a file: READ_FILE is one.
  rule.allowed_access = LANDLOCK_ACCESS_FS_READ_FILE;
  return syscall(SYS_landlock_add_rule, ruleset, LANDLOCK_RULE_PATH_BENEATH, &rule, 0) == 0;
}

int reading_ruleset(const std::vector<std::string>& files, std::string& why) {
  if (files.empty()) {
    why = "no file to refuse";
    return -1;
  }
  const long abi = syscall(SYS_landlock_create_ruleset, nullptr, 0, LANDLOCK_CREATE_RULESET_VERSION);
  if (abi < 1) {
    why = std::string("this kernel has no Landlock (") + std::strerror(errno) + ")";
    return -1;
  }
  landlock_ruleset_attr attributes{};
  attributes.handled_access_fs = LANDLOCK_ACCESS_FS_READ_FILE;
  const int ruleset = static_cast<int>(syscall(SYS_landlock_create_ruleset, &attributes, sizeof attributes, 0));
  if (ruleset < 0) {
    why = std::string("cannot create a Landlock ruleset: ") + std::strerror(errno);
    return -1;
  }
  // Reading is allowed beneath every entry of the folders on the way to a
  // refused file, except those folders themselves (their other entries are
  // allowed one by one) and the refused files; an entry that leads into one
  // of them (a link such as /lib -> usr/lib) is left out too.
  const std::set<std::string> refused(files.begin(), files.end());
  std::set<std::string> on_the_way;
  for (const auto& file : files) {
    for (auto dir = parent_of(file);; dir = parent_of(dir)) {
      on_the_way.insert(dir);
      if (dir == "/") break;
    }
  }
  auto leads_into = [&](const std::string& path) { return refused.count(path) > 0 || on_the_way.count(path) > 0; };
  for (const auto& dir : on_the_way) {
    DIR* listing = opendir(dir.c_str());
    if (!listing) continue;
    while (dirent* entry = readdir(listing)) {
      if (std::strcmp(entry->d_name, ".") == 0 || std::strcmp(entry->d_name, "..") == 0) continue;
      const auto path = joined(dir, entry->d_name);
      if (on_the_way.count(path) || refused.count(path)) continue;
      const auto target = real_path(path);
      if (target.empty() || leads_into(target)) continue;
      const int fd = open(path.c_str(), O_PATH | O_CLOEXEC);
      if (fd < 0) continue;
      const bool added = allow_reading(ruleset, fd);
      close(fd);
      if (!added) {
        why = "cannot add a Landlock rule for " + path + ": " + std::strerror(errno);
        closedir(listing);
        close(ruleset);
        return -1;
      }
    }
    closedir(listing);
  }
  return ruleset;
}

namespace {
int prepared_ruleset = -1;
std::string prepared_why = "not prepared";
bool prepared = false;
}  // namespace

void prepare_libtorch_refusal() {
  if (prepared) return;
  prepared = true;
  prepared_why.clear();
  const int made = reading_ruleset(loaded_library_files({"libtorch", "libc10"}), prepared_why);
  if (made < 0) return;
  // Above the descriptors a runner puts in place (0 to 7), and closed on exec.
  prepared_ruleset = fcntl(made, F_DUPFD_CLOEXEC, 100);
  close(made);
  if (prepared_ruleset < 0) prepared_why = std::string("cannot move the Landlock ruleset: ") + std::strerror(errno);
}

int move_libtorch_refusal(int fd) {
  if (prepared_ruleset < 0 || prepared_ruleset == fd) return prepared_ruleset;
  if (dup2(prepared_ruleset, fd) < 0) return -1;
  close(prepared_ruleset);
  prepared_ruleset = fd;
  fcntl(fd, F_SETFD, FD_CLOEXEC);
  return fd;
}

std::string refuse_reading_libtorch(int object_fd) {
  prepare_libtorch_refusal();
  if (prepared_ruleset < 0) return prepared_why;
  if (object_fd >= 0 && !allow_reading(prepared_ruleset, object_fd)) {
    return std::string("cannot add a Landlock rule for the submission: ") + std::strerror(errno);
  }
  if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 || syscall(SYS_landlock_restrict_self, prepared_ruleset, 0) != 0) {
    return std::string("cannot restrict the runner with Landlock: ") + std::strerror(errno);
  }
  close(prepared_ruleset);
  prepared_ruleset = -1;
  return "";
}

}  // namespace grader
