// grader-precompile: the early compile of a single grade. The grade script
// starts it beside the grader, with the grader's arguments: it compiles the
// submission into the compile cache while the grader is still loading
// LibTorch (about 0.7 s), and the grader's own compile (compile.cpp) waits on
// the cache entry's lock and takes the result from there. It links no
// LibTorch, so it starts in milliseconds.
//
// It is an optimisation only and never decides anything: it writes nothing
// but the cache (which holds what the compiler produced, under a key covering
// everything that decides it), says nothing, and exits 0 on anything it does
// not handle (a batch, another command, an option it does not know, an error):
// the grader then compiles as it always did.
#include <algorithm>
#include <cstring>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "judge/compile.h"
#include "judge/confinement.h"
#include "exercise/exercise.h"
#include "judge/sandbox.h"
#include "judge/toolchain.h"

namespace fs = std::filesystem;

namespace {

struct Request {
  fs::path root, build;
  std::string exercise;
  std::optional<fs::path> submission;
  std::string sandbox_mode = "auto";
};

// The grader's arguments for one grade of one file, or nothing.
std::optional<Request> parse(int argc, char** argv) {
  // Options of a single grade that do not change what is compiled.
  const std::vector<std::string> ignored = {"--format",     "--color",        "--output", "--seed",
                                            "--device",     "--time-limit",   "--memory-limit",
                                            "--output-limit"};
  const std::vector<std::string> ignored_flags = {"--no-speed", "--keep-scratch", "--profile"};
  Request request;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i], value;
    bool has_value = false;
    if (arg.rfind("--", 0) == 0) {
      if (auto equals = arg.find('='); equals != std::string::npos) {
        value = arg.substr(equals + 1);
        arg.resize(equals);
        has_value = true;
      }
      if (std::find(ignored_flags.begin(), ignored_flags.end(), arg) != ignored_flags.end()) {
        if (has_value) return std::nullopt;
        continue;
      }
      if (!has_value) {
        if (i + 1 >= argc) return std::nullopt;
        value = argv[++i];
      }
      if (arg == "--root") {
        request.root = value;
      } else if (arg == "--build-dir") {
        request.build = value;
      } else if (arg == "--sandbox") {
        request.sandbox_mode = value;
      } else if (arg == "--submission") {
        if (request.submission) return std::nullopt;  // a batch
        request.submission = value;
      } else if (std::find(ignored.begin(), ignored.end(), arg) == ignored.end()) {
        return std::nullopt;  // --no-cache, --jobs, ...: the grader's alone
      }
    } else if (request.exercise.empty()) {
      request.exercise = arg;  // a command (list, sandbox, ...) names no exercise: it fails to load, below
    } else {
      return std::nullopt;
    }
  }
  if (request.exercise.empty() || request.root.empty() || request.build.empty()) return std::nullopt;
  return request;
}

}  // namespace

int main(int argc, char** argv) {
  auto request = parse(argc, argv);
  if (!request) return 0;
  try {
    const auto root = fs::absolute(request->root);
    const auto build = fs::absolute(request->build);
    auto toolchain = grader::load_toolchain(build / "toolchain.txt");
    auto exercise = grader::load_exercise(grader::find_exercise_dir(root / "exercises", request->exercise));
    const fs::path file = request->submission ? fs::absolute(*request->submission) : exercise.learner_file();
    std::error_code error;
    if (!fs::is_regular_file(file, error)) return 0;  // a folder is a batch; a missing file, the grader's to say
    grader::Submission submission{file, grader::read_submission(file)};
    auto sandbox = grader::detect_sandbox(grader::parse_sandbox_mode(request->sandbox_mode), toolchain.seccomp);
    if (!sandbox.isolating() && sandbox.mode == grader::SandboxMode::strict) return 0;
    grader::ScratchFolder scratch(grader::scratch_base(), false, sandbox.drop_to_nobody);
    auto confinement = grader::grade_confinement(toolchain, exercise, root, build, file.parent_path(), {},
                                                 scratch.path());
    grader::compile_submission(toolchain, exercise, submission, scratch.path(), build / "cache" / exercise.id,
                               sandbox, confinement);
  } catch (...) {
    // Whatever went wrong, the grader meets it again and says so.
  }
  return 0;
}
