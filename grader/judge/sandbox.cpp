#include "judge/sandbox.h"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <random>
#include <sstream>
#include <thread>

#include "base/errors.h"
#include "judge/process.h"
#include "judge/stop.h"

namespace grader {
namespace fs = std::filesystem;
namespace {

bool write_text(const std::string& file, const std::string& text) {
  std::ofstream out(file);
  out << text;
  out.flush();
  return static_cast<bool>(out);
}

std::string read_text(const std::string& file) {
  std::ifstream in(file);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// "key value" lines (memory.events, pids.events, cpu.stat, memory.oom_control).
long long keyed_value(const std::string& file, const std::string& key) {
  std::istringstream lines(read_text(file));
  std::string name;
  long long value = 0;
  while (lines >> name >> value) {
    if (name == key) return value;
  }
  return 0;
}

// This process's own cgroup path for a v1 controller, or for v2 (controller "").
std::string own_cgroup(const std::string& controller) {
  std::istringstream lines(read_text("/proc/self/cgroup"));
  for (std::string line; std::getline(lines, line);) {
    auto first = line.find(':'), second = line.find(':', first + 1);
    if (first == std::string::npos || second == std::string::npos) continue;
    auto names = line.substr(first + 1, second - first - 1);
    auto path = line.substr(second + 1);
    if (controller.empty() ? names.empty() : ("," + names + ",").find("," + controller + ",") != std::string::npos) {
      return path;
    }
  }
  return "";
}

// New namespaces of every kind (network, processes, users, ...), no
// capabilities, a new session, death with the grader, and an empty root in
// which only the system's programs and libraries are shown, read-only:
// nothing of the machine's data (homes, /srv, /tmp, other checkouts) is there.
const char* const kSystemFolders[] = {"/usr", "/etc", "/opt"};
const char* const kSystemLinks[] = {"/bin",   "/sbin",  "/lib",
                                    "/lib64", "/lib32", "/libx32"};  // links into /usr or folders

std::vector<std::string> bwrap_base(const std::string& bwrap) {
  std::vector<std::string> args = {bwrap, "--unshare-all", "--die-with-parent", "--new-session", "--cap-drop", "ALL"};
  for (const char* dir : kSystemFolders) {
    if (fs::is_directory(dir)) args.insert(args.end(), {"--ro-bind", dir, dir});
  }
  for (const char* dir : kSystemLinks) {
    std::error_code error;
    if (fs::is_symlink(dir, error)) {
      args.insert(args.end(), {"--symlink", fs::read_symlink(dir, error).string(), dir});  // merged /usr
    } else if (fs::is_directory(dir, error)) {
      args.insert(args.end(), {"--ro-bind", dir, dir});
    }
  }
  // A private /tmp, in memory and small: the compiler needs none, the runner may not write.
  args.insert(args.end(), {"--dev", "/dev", "--proc", "/proc", "--size", "67108864", "--tmpfs", "/tmp"});
  return args;
}

std::string octal_mode(fs::perms perms) {
  char text[8];
  std::snprintf(text, sizeof(text), "%04o", static_cast<unsigned>(perms) & 07777);
  return text;
}

// Unique among processes alive and dead: a grader killed before its cleanup
// leaves its cgroup behind, and process ids are reused (a long test run wraps
// them), so the name carries random bits besides the pid.
std::string unique_name() {
  static std::atomic<int> counter{0};
  static const std::string salt = [] {
    std::random_device device;
    char text[17];
    std::snprintf(text, sizeof text, "%08x%08x", device(), device());
    return std::string(text);
  }();
  return "grader-" + std::to_string(getpid()) + "-" + salt + "-" + std::to_string(counter++);
}

// Whether user nobody may use `path` itself: read a file (or only run it, a
// program that may be execute-only), list and enter a folder.
bool nobody_may_use(const struct stat& info, bool run_only) {
  if (info.st_uid == kNobody) return true;
  mode_t need = S_ISDIR(info.st_mode) ? (S_IROTH | S_IXOTH) : run_only ? S_IXOTH : S_IROTH;
  return (info.st_mode & need) == need;
}

// The first folder above `path` that nobody may not enter, or "".
std::string closed_ancestor(const fs::path& path) {
  struct stat info {};
  for (auto dir = path.parent_path(); !dir.empty(); dir = dir.parent_path()) {
    if (stat(dir.c_str(), &info) == 0 && info.st_uid != kNobody && !(info.st_mode & S_IXOTH)) return dir.string();
    if (dir == dir.root_path()) break;
  }
  return "";
}

// The sandboxed steps run as nobody when the grader is root, and bwrap, run
// as nobody too, must walk each shown path. A file of the grader's own that
// sits in a folder nobody may not enter (a checkout in /root or in a private
// mktemp folder) is shown from a copy in the grader's tools folder instead; a
// folder there, or a file nobody may not read, is the installation's problem,
// said with the fix, never the learner's.
std::string closed_to_nobody(const std::string& path, bool run_only, bool namespaces, bool* stage) {
  struct stat info {};
  if (stat(path.c_str(), &info) != 0) return "";  // absent optional paths are skipped by the caller
  if (!nobody_may_use(info, run_only)) {
    return "user nobody, which runs the sandboxed compiler and your code when the grader is root, cannot " +
           std::string(S_ISDIR(info.st_mode) ? "enter" : run_only ? "run" : "read") + " " + path + " (mode " +
           octal_mode(static_cast<fs::perms>(info.st_mode)) + "): " +
           (run_only ? "make it executable by others (chmod o+x)" : "make it readable by others (chmod o+rX)") +
           ", or run ./grade as a regular user";
  }
  auto closed = closed_ancestor(path);
  if (closed.empty()) return "";
  if (namespaces && S_ISREG(info.st_mode)) {
    *stage = true;
    return "";
  }
  return "user nobody, which runs the sandboxed compiler and your code, cannot enter " + closed + " on the way to " +
         path + ": " +
         (namespaces ? "move the folder somewhere others may enter (chmod o+x on the folders above it), or run "
                       "./grade as a regular user"
                     : "without bwrap it walks the real path. Install bubblewrap, move the checkout to a folder "
                       "others may enter, or run ./grade as a regular user");
}

// A copy (a hard link where the file system allows) of a grader file, in a
// folder nobody may walk to, named by the file's path, size and time, so it
// is made once per build. Written under a temporary name, then renamed.
std::string staged_copy(const std::string& path) {
  struct stat info {};
  if (stat(path.c_str(), &info) != 0) throw GraderFault("cannot read " + path);
  auto dir = scratch_base() / "tools";
  std::error_code error;
  fs::create_directory(dir, error);
  fs::permissions(dir,
                  fs::perms::owner_all | fs::perms::group_read | fs::perms::group_exec | fs::perms::others_read |
                      fs::perms::others_exec,
                  error);
  char key[64];
  std::snprintf(key, sizeof(key), "%016zx-%llx-%lld.%09ld", std::hash<std::string>{}(path),
                static_cast<unsigned long long>(info.st_size), static_cast<long long>(info.st_mtim.tv_sec),
                info.st_mtim.tv_nsec);
  auto staged = dir / (std::string(key) + "-" + fs::path(path).filename().string());
  if (fs::exists(staged, error)) return staged.string();
  auto temporary = dir / (".tmp-" + unique_name());
  if (link(path.c_str(), temporary.c_str()) != 0) {
    fs::copy_file(path, temporary, fs::copy_options::overwrite_existing, error);
    if (error) throw GraderFault("cannot copy " + path + " to " + temporary.string() + ": " + error.message());
    // The original's mode: an execute-only runner stays execute-only (grader/CMakeLists.txt).
    fs::permissions(temporary, static_cast<fs::perms>(info.st_mode & 0777) | fs::perms::owner_write, error);
    // And its time: clang checks a precompiled header's or module's inputs by size and time.
    const struct timespec times[2] = {info.st_atim, info.st_mtim};
    utimensat(AT_FDCWD, temporary.c_str(), times, 0);
  }
  fs::rename(temporary, staged, error);
  if (error) throw GraderFault("cannot place " + staged.string() + ": " + error.message());
  // Earlier versions of the same file (before a rebuild) go.
  const std::string same_path = std::string(key).substr(0, 17);
  for (const auto& entry : fs::directory_iterator(dir, error)) {
    auto name = entry.path().filename().string();
    if (name.compare(0, same_path.size(), same_path) == 0 && entry.path() != staged) fs::remove(entry.path(), error);
  }
  return staged.string();
}

}  // namespace

SandboxMode parse_sandbox_mode(const std::string& text) {
  if (text == "auto") return SandboxMode::automatic;
  if (text == "strict") return SandboxMode::strict;
  if (text == "off") return SandboxMode::off;
  throw UsageError("--sandbox must be auto, strict or off, not '" + text + "'");
}

std::unique_ptr<Cgroup> Cgroup::create(const Limits& limits, std::string* why) {
  auto fail = [why](const std::string& reason) {
    if (why) *why = reason;
    return std::unique_ptr<Cgroup>();
  };
  std::unique_ptr<Cgroup> group(new Cgroup());
  const auto name = unique_name();
  const fs::path root = "/sys/fs/cgroup";
  std::error_code error;
  if (fs::exists(root / "cgroup.controllers")) {
    // v2: one folder; the controllers must be enabled for our children.
    group->version_ = "v2";
    auto base = root / fs::path(own_cgroup("")).relative_path();
    auto enabled = read_text((base / "cgroup.subtree_control").string());
    for (const char* controller : {"memory", "pids", "cpu"}) {
      if (enabled.find(controller) == std::string::npos &&
          !write_text((base / "cgroup.subtree_control").string(), std::string("+") + controller)) {
        return fail("cgroup v2: cannot enable the " + std::string(controller) + " controller in " + base.string() +
                    " (run the grader in a delegated cgroup, e.g. under systemd-run --scope -p Delegate=yes)");
      }
    }
    auto dir = base / name;
    if (!fs::create_directory(dir, error)) {
      return fail("cgroup v2: cannot create " + dir.string() + " (" +
                  (error ? error.message() : std::string("it already exists")) + ")");
    }
    group->dirs_.push_back(dir.string());
    group->memory_dir_ = group->pids_dir_ = group->cpu_dir_ = dir.string();
    group->procs_files_.push_back((dir / "cgroup.procs").string());
    if (limits.memory_bytes) {
      if (!write_text((dir / "memory.max").string(), std::to_string(limits.memory_bytes))) {
        return fail("cgroup v2: cannot set memory.max in " + dir.string());
      }
      write_text((dir / "memory.swap.max").string(), "0");  // absent without swap accounting
    }
    if (limits.processes && !write_text((dir / "pids.max").string(), std::to_string(limits.processes))) {
      return fail("cgroup v2: cannot set pids.max in " + dir.string());
    }
    return group;
  }
  // v1 (also the hybrid layout): one folder per controller.
  group->version_ = "v1";
  for (const char* controller : {"memory", "pids", "cpuacct"}) {
    auto mount = root / controller;
    if (!fs::is_directory(mount)) return fail(std::string("no cgroup ") + controller + " controller mounted");
    auto dir = mount / fs::path(own_cgroup(controller)).relative_path() / name;
    if (!fs::create_directory(dir, error)) {
      return fail(std::string("cannot create a cgroup under ") + (mount / own_cgroup(controller)).string() + " (" +
                  (error ? error.message() : dir.filename().string() + " already exists") + ")");
    }
    group->dirs_.push_back(dir.string());
    group->procs_files_.push_back((dir / "cgroup.procs").string());
    if (std::string(controller) == "memory") group->memory_dir_ = dir.string();
    if (std::string(controller) == "pids") group->pids_dir_ = dir.string();
    if (std::string(controller) == "cpuacct") group->cpu_dir_ = dir.string();
  }
  if (limits.memory_bytes) {
    if (!write_text(group->memory_dir_ + "/memory.limit_in_bytes", std::to_string(limits.memory_bytes))) {
      return fail("cgroup v1: cannot set memory.limit_in_bytes");
    }
    // With swap accounting, swap must not extend the limit (absent: no swap accounting).
    write_text(group->memory_dir_ + "/memory.memsw.limit_in_bytes", std::to_string(limits.memory_bytes));
  }
  if (limits.processes && !write_text(group->pids_dir_ + "/pids.max", std::to_string(limits.processes))) {
    return fail("cgroup v1: cannot set pids.max");
  }
  return group;
}

Cgroup::~Cgroup() {
  kill_all();
  for (const auto& dir : dirs_) {
    for (int attempt = 0; attempt < 50 && rmdir(dir.c_str()) != 0 && errno == EBUSY; ++attempt) {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
  }
}

double Cgroup::cpu_seconds() const {
  if (version_ == "v2") return keyed_value(cpu_dir_ + "/cpu.stat", "usage_usec") / 1e6;
  std::istringstream text(read_text(cpu_dir_ + "/cpuacct.usage"));
  long long nanoseconds = 0;
  text >> nanoseconds;
  return nanoseconds / 1e9;
}

std::vector<pid_t> Cgroup::threads() const {
  std::vector<pid_t> out;
  std::ifstream in(cpu_dir_ + (version_ == "v2" ? "/cgroup.threads" : "/tasks"));
  for (long tid = 0; in >> tid;) {
    if (tid > 0) out.push_back(static_cast<pid_t>(tid));
  }
  return out;
}

int Cgroup::oom_kills() const {
  if (version_ == "v2") return static_cast<int>(keyed_value(memory_dir_ + "/memory.events", "oom_kill"));
  return static_cast<int>(keyed_value(memory_dir_ + "/memory.oom_control", "oom_kill"));
}

std::optional<uint64_t> Cgroup::memory_peak_bytes() const {
  // v1: memory.max_usage_in_bytes; v2: memory.peak (Linux 5.19 and later).
  const auto file = memory_dir_ + (version_ == "v2" ? "/memory.peak" : "/memory.max_usage_in_bytes");
  std::istringstream text(read_text(file));
  unsigned long long bytes = 0;
  if (!(text >> bytes) || bytes == 0) return std::nullopt;
  return static_cast<uint64_t>(bytes);
}

std::optional<uint64_t> Cgroup::memory_usage_bytes() const {
  const auto file = memory_dir_ + (version_ == "v2" ? "/memory.current" : "/memory.usage_in_bytes");
  std::istringstream text(read_text(file));
  unsigned long long bytes = 0;
  if (!(text >> bytes)) return std::nullopt;
  return static_cast<uint64_t>(bytes);
}

void Cgroup::reset_memory_peak() {
  if (version_ != "v2") write_text(memory_dir_ + "/memory.max_usage_in_bytes", "0");
}

int Cgroup::process_cap_hits() const { return static_cast<int>(keyed_value(pids_dir_ + "/pids.events", "max")); }

void Cgroup::kill_all() {
  if (version_ == "v2" && write_text(pids_dir_ + "/cgroup.kill", "1")) {
    // the kernel kills them all; wait below until they are gone
  }
  for (int round = 0; round < 200; ++round) {
    std::istringstream pids(read_text(pids_dir_ + "/cgroup.procs"));
    bool any = false;
    for (pid_t pid; pids >> pid;) {
      kill(pid, SIGKILL);
      any = true;
    }
    if (!any) return;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
}

std::string SandboxStatus::describe() const {
  if (mode == SandboxMode::off) {
    return std::string("sandbox off (--sandbox off): limits only") +
           (seccomp ? ", and the runner's system-call filter" : "") + (drop_to_nobody ? ", user nobody" : "");
  }
  std::string text = isolating() ? "sandbox: " : "sandbox incomplete, limits only for what is missing: ";
  text += std::string(namespaces ? "namespaces (bwrap)" : "no namespaces") + ", " +
          (cgroups.empty() ? "no cgroups" : "cgroup " + cgroups) + ", " + (seccomp ? "seccomp" : "no seccomp") +
          (drop_to_nobody ? ", user nobody" : "");
  for (const auto& problem : problems) text += "; " + problem;
  return text;
}

SandboxStatus detect_sandbox(SandboxMode mode, bool seccomp_built) {
  SandboxStatus status;
  status.mode = mode;
  // The runner's system-call filter needs no privilege and keeps one grade's
  // code from another's files and processes, so it stays on in every mode.
  status.seccomp = seccomp_built;
  if (!seccomp_built) status.problems.push_back("the runner was built without libseccomp (install libseccomp-dev)");
  // As root, learner code runs as nobody in every mode, off included: the
  // descriptor-based calls and other processes' /proc entries then reach
  // nothing of root's.
  status.drop_to_nobody = geteuid() == 0;
  if (mode == SandboxMode::off) return status;

  std::string why;
  if (auto probe = Cgroup::create({64ull << 20, 8}, &why)) {
    status.cgroups = probe->version();
  } else {
    status.problems.push_back(why);
  }

  for (const char* candidate : {"/usr/bin/bwrap", "/bin/bwrap", "/usr/local/bin/bwrap"}) {
    if (access(candidate, X_OK) == 0) {
      status.bwrap = candidate;
      break;
    }
  }
  if (status.bwrap.empty()) {
    status.problems.push_back("bwrap not found (install bubblewrap)");
    return status;
  }
  // Exactly the namespaces and mounts every sandboxed child gets.
  ChildSpec probe;
  probe.argv = bwrap_base(status.bwrap);
  probe.argv.insert(probe.argv.end(), {"--", "/bin/true"});
  probe.drop_to_nobody = status.drop_to_nobody;
  probe.limits.wall_seconds = 10;
  auto outcome = run_child(probe);
  status.namespaces = outcome.exited_cleanly();
  if (!status.namespaces) {
    auto reason = outcome.stderr_text.substr(0, outcome.stderr_text.find('\n'));
    status.problems.push_back("bwrap cannot create namespaces here (" +
                              (reason.empty() ? outcome.describe_end() : reason) + "; see docs/sandbox.md)");
  }
  return status;
}

void sandbox_child(const SandboxStatus& sandbox, const Confinement& confinement, ChildSpec& spec) {
  spec.signal_in_exit_code = sandbox.namespaces;
  spec.wrapper_processes = sandbox.namespaces ? 2 : 0;  // bwrap outside, and bwrap as the namespace's init
  spec.use_cgroup = !sandbox.cgroups.empty();
  spec.drop_to_nobody = sandbox.drop_to_nobody;
  if (!confinement.work_dir.empty()) spec.working_dir = confinement.work_dir;
  // What bwrap binds each shown path from.
  std::vector<std::pair<std::string, std::string>> shown;
  auto show = [&](const std::string& given, bool run_only) {
    // Bound at its real place: a path through a link (/usr/local/cuda/include)
    // cannot be made inside the read-only system folders, and needs not be.
    std::error_code error;
    auto real = fs::weakly_canonical(given, error);
    const std::string path = error ? given : real.string();
    bool stage = false;
    if (sandbox.drop_to_nobody) {
      auto problem = closed_to_nobody(path, run_only, sandbox.namespaces, &stage);
      if (!problem.empty()) throw GraderFault(problem);
    }
    shown.emplace_back(stage ? staged_copy(path) : path, path);
  };
  for (const auto& path : confinement.read_only) {
    if (fs::exists(path)) show(path, false);
  }
  for (const auto& path : confinement.executed) {
    if (fs::exists(path)) show(path, true);
  }
  if (!confinement.writable.empty()) show(confinement.writable, false);
  if (!sandbox.namespaces) return;

  auto out = bwrap_base(sandbox.bwrap);
  // Hiding one of the shown system folders (or the root, its ancestor) would
  // take the programs away: a folder to hide that is one of them is left alone.
  auto is_system = [](const fs::path& dir) {
    if (dir == "/" || dir == "/proc" || dir == "/dev") return true;
    for (const char* system : kSystemFolders)
      if (dir == system) return true;
    for (const char* system : kSystemLinks)
      if (dir == system) return true;
    return false;
  };
  // A folder to hide needs covering only where a folder shown whole (a
  // system folder, a shown folder) would show it: elsewhere the empty root
  // already hides it, and a covering mount would name it in /proc/self/mountinfo.
  std::vector<fs::path> shown_whole;
  for (size_t i = 0; i + 2 < out.size(); ++i) {  // what bwrap_base binds: "--ro-bind SOURCE DEST"
    if (out[i] == "--ro-bind" && fs::is_directory(out[i + 2])) shown_whole.emplace_back(out[i + 2]);
  }
  for (const auto& [source, path] : shown) {
    if (fs::is_directory(path)) shown_whole.emplace_back(path);
  }
  auto visible = [&](const fs::path& dir) {
    return std::any_of(shown_whole.begin(), shown_whole.end(), [&](const fs::path& whole) {
      auto rel = dir.lexically_relative(whole);
      return !rel.empty() && *rel.begin() != "..";
    });
  };
  for (const auto& dir : confinement.hidden) {
    if (!is_system(dir) && fs::is_directory(dir) && visible(fs::path(dir).lexically_normal()))
      out.insert(out.end(), {"--tmpfs", dir});
  }
  for (size_t i = 0; i < shown.size(); ++i) {
    bool writable = !confinement.writable.empty() && i + 1 == shown.size();
    out.insert(out.end(), {writable ? "--bind" : "--ro-bind", shown[i].first, shown[i].second});
  }
  for (const auto& device : confinement.devices) out.insert(out.end(), {"--dev-bind", device, device});
  if (!confinement.work_dir.empty()) out.insert(out.end(), {"--chdir", confinement.work_dir});
  // bwrap reads its options from a pipe (--args), so that no command line
  // inside (its own, as the sandbox's first process) names the folders it
  // binds and hides; the command itself must follow on its command line.
  spec.launcher_args.clear();
  for (size_t i = 1; i < out.size(); ++i) spec.launcher_args += out[i] + '\0';
  out = {out.front(), "--args", "5", "--"};
  out.insert(out.end(), spec.argv.begin(), spec.argv.end());
  spec.argv = std::move(out);
}

fs::path scratch_base() {
  auto base = fs::temp_directory_path() / ("attention-grader-" + std::to_string(geteuid()));
  if (mkdir(base.c_str(), 0711) != 0 && errno != EEXIST) {
    throw GraderFault("cannot create " + base.string() + ": " + std::strerror(errno));
  }
  // In a shared /tmp another user could have made it first, or planted a link.
  struct stat info {};
  if (lstat(base.c_str(), &info) != 0 || !S_ISDIR(info.st_mode) || info.st_uid != geteuid()) {
    throw GraderFault(base.string() + " is not a folder of this user's: remove it, or set TMPDIR to another folder");
  }
  if ((info.st_mode & 07777) != 0711) chmod(base.c_str(), 0711);  // nobody passes through, lists nothing
  return base;
}

bool remove_tree(const fs::path& path) {
  int top = open(path.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (top < 0) {
    if (errno == ENOENT) return true;
    return unlink(path.c_str()) == 0;  // a file or a link where the folder was
  }
  unsigned long lifted = 0;
  auto lift_name = [&lifted] { return ".lifted-" + std::to_string(lifted++); };
  for (bool progress = true; progress;) {
    progress = false;
    std::vector<std::string> folders;
    int listing = dup(top);
    DIR* dir = listing >= 0 ? fdopendir(listing) : nullptr;
    if (!dir) {
      if (listing >= 0) close(listing);
      break;
    }
    rewinddir(dir);
    while (auto* entry = readdir(dir)) {
      std::string name = entry->d_name;
      if (name == "." || name == "..") continue;
      if (unlinkat(top, name.c_str(), 0) == 0) {
        progress = true;
      } else {
        folders.push_back(name);
      }
    }
    closedir(dir);
    for (const auto& name : folders) {
      if (unlinkat(top, name.c_str(), AT_REMOVEDIR) == 0) {
        progress = true;
        continue;
      }
      // Not empty: move what it holds up into the top folder.
      fchmodat(top, name.c_str(), 0700, 0);
      int child = openat(top, name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
      DIR* inner = child >= 0 ? fdopendir(child) : nullptr;
      if (!inner) {
        if (child >= 0) close(child);
        continue;
      }
      while (auto* entry = readdir(inner)) {
        std::string item = entry->d_name;
        if (item == "." || item == "..") continue;
        for (int attempt = 0; attempt < 100; ++attempt) {
          if (renameat(dirfd(inner), item.c_str(), top, lift_name().c_str()) == 0) {
            progress = true;
            break;
          }
          if (errno != EEXIST && errno != ENOTEMPTY) break;
        }
      }
      closedir(inner);
    }
  }
  close(top);
  return rmdir(path.c_str()) == 0 || errno == ENOENT;
}

ChildLimits child_limits(const StepLimits& step) {
  ChildLimits limits;
  limits.wall_seconds = step.seconds;
  limits.cpu_seconds = step.cpu_seconds;
  limits.memory_bytes = static_cast<size_t>(step.memory_mb * 1024 * 1024);
  limits.processes = step.processes;
  limits.output_bytes = static_cast<size_t>(step.output_kb * 1024);
  return limits;
}

ScratchFolder::ScratchFolder(const fs::path& parent, bool keep, bool for_nobody) : keep_(keep) {
  fs::create_directories(parent);
  std::string pattern = (parent / "grade-XXXXXX").string();
  if (!mkdtemp(pattern.data())) throw GraderFault("cannot create a scratch folder under " + parent.string());
  path_ = pattern;
  if (!keep_ && !track_scratch(path_)) {
    rmdir(path_.c_str());
    throw GraderFault("the grade was stopped");
  }
  // The sandboxed compiler and runner run as nobody: the only folder they may write.
  if (for_nobody && chown(path_.c_str(), kNobody, kNobody) != 0) {
    throw GraderFault("cannot hand the scratch folder " + path_.string() + " to user nobody");
  }
}

ScratchFolder::~ScratchFolder() {
  if (!keep_) untrack_scratch(path_);
  if (!keep_ && !remove_tree(path_)) {
    std::fprintf(stderr, "grade: warning: could not remove the scratch folder %s\n", path_.c_str());
  }
}

}  // namespace grader
