// A batch of correct, wrong and hostile submissions graded two at a time,
// twice: every verdict must equal the submission's label (which the corpus test
// holds single grades to), and nothing may be left behind: no scratch folder,
// no cgroup, no process, no System V or POSIX IPC object. Once in the default
// sandbox and once with --sandbox off (what a machine without namespaces gets):
// the attacks on neighbours and on the machine must fail in both. Runs alone
// (RUN_SERIAL), so what is left is its own.
#include <sys/stat.h>
#include <yaml-cpp/yaml.h>

#include <map>
#include <sstream>

#include "corpus_support.h"

namespace {
namespace fs = std::filesystem;
using namespace corpus;

std::string read_text(const fs::path& file) {
  std::ifstream in(file);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// The folders this process's cgroups live in (a grade makes its children's there).
std::vector<fs::path> own_cgroup_dirs() {
  std::vector<fs::path> dirs;
  std::istringstream lines(read_text("/proc/self/cgroup"));
  for (std::string line; std::getline(lines, line);) {
    auto first = line.find(':'), second = line.find(':', first + 1);
    if (second == std::string::npos) continue;
    auto controllers = line.substr(first + 1, second - first - 1);
    auto path = fs::path(line.substr(second + 1)).relative_path();
    if (controllers.empty()) dirs.push_back(fs::path("/sys/fs/cgroup") / path);
    for (const char* controller : {"memory", "pids", "cpuacct"}) {
      if (("," + controllers + ",").find(std::string(",") + controller + ",") != std::string::npos) {
        dirs.push_back(fs::path("/sys/fs/cgroup") / controller / path);
      }
    }
  }
  return dirs;
}

// Everything a grade could leave behind, by name.
std::set<std::string> leftovers() {
  std::set<std::string> found;
  std::error_code error;
  // The grader's scratch folders live under <temp>/attention-grader-<uid> (grader/judge/sandbox.cpp, scratch_base()).
  const auto scratch = fs::temp_directory_path() / ("attention-grader-" + std::to_string(geteuid()));
  for (const auto& entry : fs::directory_iterator(scratch, error)) found.insert(entry.path().string());
  for (const auto& dir : own_cgroup_dirs()) {
    for (const auto& entry : fs::directory_iterator(dir, error)) {
      if (entry.path().filename().string().rfind("grader-", 0) == 0) found.insert(entry.path().string());
    }
  }
  // IPC objects outlive a process without an IPC namespace: System V's by id, POSIX's by name.
  for (const char* table : {"/proc/sysvipc/shm", "/proc/sysvipc/msg", "/proc/sysvipc/sem"}) {
    std::istringstream lines(read_text(table));
    std::string line;
    std::getline(lines, line);  // the heading
    while (std::getline(lines, line)) {
      if (line.find_first_not_of(' ') != std::string::npos)
        found.insert(std::string(table) + ": " + line.substr(0, 80));
    }
  }
  for (const char* dir : {"/dev/shm", "/dev/mqueue"}) {
    for (const auto& entry : fs::directory_iterator(dir, error)) found.insert(entry.path().string());
  }
  for (const auto& entry : fs::directory_iterator("/proc", error)) {
    auto pid = entry.path().filename().string();
    if (pid.find_first_not_of("0123456789") != std::string::npos) continue;
    std::string comm;
    std::getline(std::ifstream(entry.path() / "comm"), comm);
    struct stat info {};
    bool nobody = stat(entry.path().c_str(), &info) == 0 && info.st_uid == 65534;
    if (comm == "grader-runner" || comm == "bwrap" || nobody) {
      std::string state;
      std::getline(std::ifstream(entry.path() / "stat"), state);
      found.insert("process " + pid + " (" + comm + "): " + state.substr(0, 120));
    }
  }
  return found;
}

// The rows of `got` that differ from `want`, one line each, with what the
// report said about each where `why` has it: short enough to survive a log cut.
std::string differences(const std::map<std::string, std::string>& got, const std::map<std::string, std::string>& want,
                        const std::map<std::string, std::string>& why = {}) {
  std::string lines;
  std::set<std::string> names;
  for (const auto& row : got) names.insert(row.first);
  for (const auto& row : want) names.insert(row.first);
  for (const auto& name : names) {
    auto g = got.count(name) ? got.at(name) : "(no report)";
    auto w = want.count(name) ? want.at(name) : "(not in the batch)";
    if (g == w) continue;
    lines += "\n  " + name + ": labelled " + w + ", graded " + g;
    if (why.count(name)) lines += " (" + why.at(name).substr(0, 2000) + ")";
  }
  return lines;
}

struct Pick {
  std::string kind;  // accepted, wrong, hostile, solution
  std::string name;
};

// The batch in one sandbox mode ("auto" or "off"): labels whose verdict needs
// the sandbox are left out where it does not isolate (or is off).
void stress_batch(const std::string& mode) {
  const bool isolated = mode != "off" && sandbox_isolates();
  const std::string exercise = "exercise_sdpa";
  const fs::path corpus_dir = kRoot / "tests/submissions" / exercise;
  const std::vector<Pick> picks = {
      {"solution", "sdpa"},
      {"accepted", "matmul_div_sqrt"},
      {"wrong", "no_scaling"},
      {"wrong", "mask_ignored"},
      {"hostile", "infinite_loop"},
      {"hostile", "huge_output"},
      {"hostile", "segfault"},
      {"hostile", "escape_sequences"},
      {"hostile", "orphaned_grandchild"},
      {"hostile", "fork_bomb"},
      {"hostile", "memory_bomb"},
      {"hostile", "kills_every_process"},
      {"hostile", "fills_disk"},
      {"hostile", "overwrites_other_grades"},
      {"hostile", "deep_directory_chain"},
      {"hostile", "creates_ipc_objects"},
      {"hostile", "changes_modes_through_descriptors"},
      {"hostile", "disturbs_neighbours"},
      {"hostile", "replaces_result_channel_raw"},
  };
  auto dir = fs::temp_directory_path() / ("grader-stress-" + mode + "-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  std::map<std::string, std::string> want;
  for (const auto& pick : picks) {
    auto from = pick.kind == "solution" ? kRoot / "solutions" / exercise / (pick.name + ".cpp")
                                        : corpus_dir / pick.kind / (pick.name + ".cpp");
    ASSERT_TRUE(fs::exists(from)) << from;
    std::string verdict = "passed";
    if (pick.kind == "wrong" || pick.kind == "hostile") {
      auto label = YAML::LoadFile(from.parent_path() / (pick.name + ".expect.yaml"));
      if (label["needs_sandbox"] && label["needs_sandbox"].as<bool>() && !isolated) continue;
      verdict = label["verdict"].as<std::string>();
    }
    auto name = pick.kind + "_" + pick.name + ".cpp";
    fs::copy_file(from, dir / name);
    want[name] = verdict;
  }
  auto before = leftovers();
  Entry folder{exercise, "stress", dir};
  auto extra = kHostileLimits;
  extra.insert(extra.end(), {"--jobs", "2", "--sandbox", mode});

  // Round 1: the JSON array.
  auto first = run_grade(folder, extra);
  ASSERT_TRUE(first.report.is_array()) << first.raw.substr(0, 4000);
  std::map<std::string, std::string> got, why;
  for (const auto& report : first.report) {
    const auto name = fs::path(report.value("submission", "")).filename().string();
    got[name] = report.value("verdict", "");
    why[name] = report.value("summary", "");
    // The failed checks too: an unexplained failure says which check, on what.
    for (const auto& check : report.value("checks", nlohmann::json::array())) {
      if (check.value("status", "") != "failed") continue;
      why[name] += " | " + check.value("id", "") + ": " + check.value("message", "").substr(0, 300);
      for (const auto& item : check.value("evidence", nlohmann::json::array())) {
        if (item.is_string()) why[name] += " / " + item.get<std::string>().substr(0, 300);
      }
    }
  }
  EXPECT_TRUE(got == want) << "verdicts that differ from the labels:" << differences(got, want, why);
  EXPECT_EQ(first.exit_code, 1);

  // Round 2: the table, which must print nothing a terminal would act on.
  auto second = run_grade(folder, extra, "text");
  EXPECT_EQ(first_unsafe_character(second.raw), "") << second.raw;
  std::map<std::string, std::string> table;
  std::istringstream rows(second.raw);
  for (std::string row; std::getline(rows, row);) {
    std::istringstream cells(row);
    std::string name, verdict;
    if (cells >> name >> verdict && want.count(name)) table[name] = verdict;
  }
  EXPECT_TRUE(table == want) << second.raw << "\nrows that differ from the labels:" << differences(table, want);

  std::set<std::string> left;
  for (const auto& item : leftovers()) {
    if (!before.count(item)) left.insert(item);
  }
  std::string listed;
  for (const auto& item : left) listed += "\n  " + item;
  EXPECT_TRUE(left.empty()) << left.size() << " thing(s) outlived the batch:" << listed;
  fs::remove_all(dir);
}

TEST(Stress, BatchVerdictsEqualLabelsAndNothingIsLeft) { stress_batch("auto"); }

// Without namespaces: the runner as nobody, its filter, not dumpable.
TEST(Stress, WithoutTheSandboxToo) {
  if (auto why = unsandboxed_grading_blocked(); !why.empty()) {
    GTEST_SKIP() << "--sandbox off cannot grade on this machine (" << why << "); NOT counted as passed";
  }
  stress_batch("off");
}

}  // namespace
