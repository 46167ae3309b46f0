#include "sandbox.h"

#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "errors.h"
#include "process.h"

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
  args.insert(args.end(), {"--dev", "/dev", "--proc", "/proc", "--tmpfs", "/tmp"});
  return args;
}

std::string unique_name() {
  static std::atomic<int> counter{0};
  return "grader-" + std::to_string(getpid()) + "-" + std::to_string(counter++);
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
    if (!fs::create_directory(dir, error)) return fail("cgroup v2: cannot create " + dir.string());
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
                  error.message() + ")");
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

int Cgroup::oom_kills() const {
  if (version_ == "v2") return static_cast<int>(keyed_value(memory_dir_ + "/memory.events", "oom_kill"));
  return static_cast<int>(keyed_value(memory_dir_ + "/memory.oom_control", "oom_kill"));
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
  if (mode == SandboxMode::off) return "sandbox off (--sandbox off): limits only";
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
  if (mode == SandboxMode::off) return status;
  status.drop_to_nobody = geteuid() == 0;

  status.seccomp = seccomp_built;
  if (!seccomp_built) status.problems.push_back("the runner was built without libseccomp (install libseccomp-dev)");

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
                              (reason.empty() ? outcome.describe_end() : reason) + "; see README: Sandbox)");
  }
  return status;
}

std::vector<std::string> confine(const SandboxStatus& sandbox, const Confinement& confinement,
                                 const std::vector<std::string>& argv) {
  if (!sandbox.namespaces) return argv;
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
  for (const auto& dir : confinement.hidden) {
    if (!is_system(dir) && fs::is_directory(dir)) out.insert(out.end(), {"--tmpfs", dir});
  }
  for (const auto& path : confinement.read_only) {
    if (fs::exists(path)) out.insert(out.end(), {"--ro-bind", path, path});
  }
  if (!confinement.writable.empty()) {
    out.insert(out.end(), {"--bind", confinement.writable, confinement.writable, "--chdir", confinement.writable});
  }
  out.push_back("--");
  out.insert(out.end(), argv.begin(), argv.end());
  return out;
}

void sandbox_child(const SandboxStatus& sandbox, const Confinement& confinement, ChildSpec& spec) {
  spec.argv = confine(sandbox, confinement, spec.argv);
  spec.signal_in_exit_code = sandbox.namespaces;
  spec.use_cgroup = !sandbox.cgroups.empty();
  spec.drop_to_nobody = sandbox.drop_to_nobody;
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

}  // namespace grader
