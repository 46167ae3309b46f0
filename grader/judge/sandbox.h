// Isolation for learner code and the compiler, from what the machine offers:
//
//   namespaces  bubblewrap (bwrap): a read-only view of the file system with the
//               project, the build folder and the submissions' folders hidden,
//               one writable scratch folder, no network, a private process tree,
//               no capabilities, a new session, death with the parent; run as
//               the unprivileged user `nobody` when the grader runs as root
//   cgroups     a memory limit, a process/thread cap and a CPU-time counter per
//               child (cgroup v1 or v2), whose counters decide the verdict
//   seccomp     the runner's system-call filter (grader/runner/seccomp.cpp):
//               no new processes, sockets, ptrace or namespaces
//
// detect_sandbox() finds out once, at start, what works. In automatic mode a
// missing piece means limits-only (rlimits and the parent's own timer and byte
// caps) with a one-line notice; in strict mode it is a grader error.
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "exercise/exercise.h"
#include "judge/process.h"

namespace grader {

// The unprivileged user and group sandboxed children run as when the grader is root.
constexpr unsigned kNobody = 65534;

enum class SandboxMode { automatic, strict, off };

// Throws UsageError for anything but auto, strict, off.
SandboxMode parse_sandbox_mode(const std::string& text);

// A cgroup for one child: limits set at creation, counters read afterwards.
class Cgroup {
 public:
  struct Limits {
    uint64_t memory_bytes = 0;  // 0: none
    int processes = 0;          // processes and threads together; 0: none
  };
  // nullptr when cgroups cannot be used here (with the reason in *why).
  static std::unique_ptr<Cgroup> create(const Limits& limits, std::string* why = nullptr);
  ~Cgroup();
  Cgroup(const Cgroup&) = delete;
  Cgroup& operator=(const Cgroup&) = delete;

  // The files a child writes its pid to, to join (prepared before fork: the
  // child may only make async-signal-safe calls).
  const std::vector<std::string>& procs_files() const { return procs_files_; }
  const std::string& version() const { return version_; }

  double cpu_seconds() const;    // CPU time of everything that ran in it
  std::vector<pid_t> threads() const;  // the threads in it now
  int oom_kills() const;         // processes the kernel killed for memory
  int process_cap_hits() const;  // forks/clones refused by the process cap
  // The most memory everything in it held at once, by the kernel's count
  // (anonymous memory, stacks, page cache it brought in); nothing where the
  // kernel does not say (cgroup v2 before Linux 5.19).
  std::optional<uint64_t> memory_peak_bytes() const;
  // Restarts that peak from what is held now (cgroup v1; v2 keeps its peak).
  void reset_memory_peak();
  bool can_reset_memory_peak() const { return version_ != "v2"; }
  // What everything in it holds now, by the kernel's count.
  std::optional<uint64_t> memory_usage_bytes() const;
  void kill_all();               // SIGKILL everything still in it, until empty

 private:
  Cgroup() = default;
  std::string version_;
  std::vector<std::string> dirs_;  // created, removed in the destructor
  std::string memory_dir_, pids_dir_, cpu_dir_;
  std::vector<std::string> procs_files_;
};

struct SandboxStatus {
  SandboxMode mode = SandboxMode::automatic;
  bool namespaces = false;  // bwrap runs
  std::string bwrap;        // its path
  std::string cgroups;      // "v1", "v2", or empty
  bool seccomp = false;     // the runner was built with its filter
  bool drop_to_nobody = false;
  std::vector<std::string> problems;  // why a piece is missing

  bool isolating() const { return namespaces && !cgroups.empty() && seccomp; }
  std::string describe() const;  // one line
};

// seccomp_built: whether the runner has its filter (from toolchain.txt).
SandboxStatus detect_sandbox(SandboxMode mode, bool seccomp_built);

// What one sandboxed child may see.
struct Confinement {
  std::vector<std::string> hidden;     // folders replaced by empty ones (never the system's own)
  std::vector<std::string> read_only;  // files or folders shown again, read-only
  std::vector<std::string> executed;   // programs shown read-only that the child only runs (may be execute-only)
  std::string writable;                // the scratch folder, for steps that write (the compiler); may be empty
  std::string work_dir;                // where the child starts
  std::vector<std::string> devices;    // device nodes shown read-write (a GPU's /dev/nvidia*)
};

// Puts a child (its argv already set) into the sandbox: bwrap, cgroup, user.
// Throws GraderFault naming the path and the fix when user nobody, which runs
// sandboxed children when the grader is root, could not use a shown path.
void sandbox_child(const SandboxStatus& sandbox, const Confinement& confinement, ChildSpec& spec);

// Where scratch folders live: <temp>/attention-grader-<uid>, mode 0711, so
// user nobody can reach its own scratch folder even when the checkout lies in
// a folder only its owner may enter. Throws GraderFault if it is not ours.
std::filesystem::path scratch_base();

// Removes a folder and everything in it, however deep (entries are lifted up
// one level at a time: neither descriptors nor path length run out) and
// whatever their modes. True when nothing is left.
bool remove_tree(const std::filesystem::path& path);

// A grade's scratch folder under scratch_base(), removed with everything in it
// at the end (unless kept for inspection); handed to user nobody when the
// sandboxed steps run as nobody.
class ScratchFolder {
 public:
  ScratchFolder(const std::filesystem::path& parent, bool keep, bool for_nobody);
  ~ScratchFolder();
  ScratchFolder(const ScratchFolder&) = delete;
  ScratchFolder& operator=(const ScratchFolder&) = delete;
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
  bool keep_;
};

// An exercise's limits for one step (compile or run), as a child's limits.
ChildLimits child_limits(const StepLimits& step);

}  // namespace grader
