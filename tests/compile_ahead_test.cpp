// grade watch compiles a save with a compiler started before it (compile.h:
// EarlyCompile). Whatever the source, that must give the report a compile of
// the file itself gives: same verdict, checks and compiler messages.
#include <algorithm>
#include <random>
#include <regex>

#include "judge/compile.h"
#include "corpus_support.h"
#include "judge/compile_step.h"
#include "judge/confinement.h"
#include "judge/early_link.h"
#include "judge/grade.h"
#include "judge/toolchain.h"

namespace corpus {
namespace {

std::string read(const fs::path& file) {
  std::ifstream in(file, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// What must agree between the two compiles.
std::string essentials(const grader::GradeReport& report) {
  std::string out = std::string(grader::verdict_name(report.verdict)) + "\n" + report.summary + "\n" +
                    report.compiler_output + "\n";
  for (const auto& check : report.checks) {
    out += check.id + " " + std::to_string(static_cast<int>(check.status)) + " " + check.message + "\n";
  }
  return out;
}

TEST(CompileAhead, GivesTheReportOfACompileOfTheFile) {
  auto dir = fs::temp_directory_path() / ("grader-ahead-test-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  grader::GradeOptions options;
  options.project_root = kRoot;
  options.build_dir = kBuild;
  options.use_cache = false;
  options.seed = 20261124;
  options.sandbox = grader::detect_sandbox(grader::SandboxMode::automatic,
                                           grader::load_toolchain(kBuild / "toolchain.txt").seccomp);
  const auto sdpa = kRoot / "tests/submissions/exercise_sdpa";
  const auto model = read(kRoot / "solutions/exercise_sdpa/sdpa.cpp");
  struct Case {
    std::string exercise, name, text;
    // false: both refused, in words of their own (the file's own compile
    // warns about `#pragma once` in the main file; a special file is not
    // found there, and refused by name here; the stub is one more level of
    // inclusion).
    bool same_messages = true;
    // false: the compile ahead is given up for a compile of the file as
    // itself (its messages would be about the stub).
    bool started_ahead = true;
  };
  std::vector<Case> cases = {
      {"exercise_sdpa", "model", model},
      {"exercise_sdpa", "no_scaling", read(sdpa / "wrong/no_scaling.cpp")},
      {"exercise_sdpa", "byte_order_mark", "\xEF\xBB\xBF" + model},
      {"exercise_sdpa", "no_newline_at_end", model.substr(0, model.find_last_not_of("\n") + 1)},
      // Errors point at the learner's lines, under the learner's file name.
      {"exercise_sdpa", "compile_error", model + "\nint broken(;\n"},
      {"exercise_sdpa", "error_in_first_line", "int broken(;\n" + model},
      {"exercise_sdpa", "unterminated_comment", model + "\n/* never closed\n"},
      // Reported at the end of the main file: the stub's, ahead.
      {"exercise_sdpa", "unclosed_brace_at_end", model + "\nint f() {\n", true, false},
      {"exercise_sdpa", "unclosed_namespace", "namespace mine {\n" + model, true, false},
      {"exercise_sdpa", "file_name_in_a_message",
       model + "\nstatic_assert(sizeof(__FILE__) == 1, __FILE__);\n"},
      {"exercise_sdpa", "includes_dev_stdin", read(sdpa / "hostile/includes_dev_stdin.cpp")},
      {"exercise_sdpa", "includes_reference", read(sdpa / "hostile/includes_reference.cpp")},
      {"exercise_sdpa", "includes_ahead_pipe", read(sdpa / "hostile/includes_ahead_pipe.cpp"), false},
      {"exercise_sdpa", "includes_itself", "#pragma once\n#include __FILE__\n" + model, false},
      // (Too deep one inclusion sooner here: the stub is one.)
      {"exercise_sdpa", "includes_itself_endlessly", "#include __FILE__\n" + model, false},
      {"exercise_sdpa", "calls_kernel_directly", read(sdpa / "hostile/calls_kernel_directly.cpp")},
      // All of LibTorch's API: the compiler started ahead loaded the other header.
      {"exercise_mhsa", "torch_header_only",
       read(kRoot / "tests/submissions/exercise_mhsa/accepted/torch_header_only.cpp")},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.exercise + " " + c.name);
    options.exercise = c.exercise;
    const auto file = dir / fs::path(grader::load_exercise(kRoot / "exercises" / c.exercise).learner_files.front());
    options.submission = file;
    std::ofstream(file, std::ios::binary | std::ios::trunc) << c.text;
    auto alone = grader::grade(options);
    EXPECT_FALSE(alone.compile_ahead);
    // Started before the file changes (as grade watch does), with the
    // header the file before needed.
    std::ofstream(file, std::ios::binary | std::ios::trunc) << (c.name == "torch_header_only" ? c.text : model);
    auto prepared = grader::prepare_grade(options, true);
    std::ofstream(file, std::ios::binary | std::ios::trunc) << c.text;
    auto ahead = grader::grade(options, std::move(prepared));
    EXPECT_EQ(ahead.compile_ahead, c.started_ahead) << essentials(ahead);
    if (c.same_messages) {
      EXPECT_EQ(essentials(ahead), essentials(alone));
    } else {
      EXPECT_EQ(ahead.verdict, grader::Verdict::compile_error) << essentials(ahead);
      EXPECT_EQ(alone.verdict, grader::Verdict::compile_error) << essentials(alone);
    }
    // Nothing of the stub shows.
    EXPECT_FALSE(std::regex_search(ahead.compiler_output, std::regex("ahead-[0-9a-f]{16}|__grader_ahead")))
        << ahead.compiler_output;
  }
  // A save that switches to all of LibTorch's API: compiled as itself.
  options.exercise = "exercise_mhsa";
  const auto file = dir / "mhsa.cpp";
  options.submission = file;
  std::ofstream(file, std::ios::binary | std::ios::trunc) << read(kRoot / "solutions/exercise_mhsa/mhsa.cpp");
  auto prepared = grader::prepare_grade(options, true);
  std::ofstream(file, std::ios::binary | std::ios::trunc)
      << read(kRoot / "tests/submissions/exercise_mhsa/accepted/torch_header_only.cpp");
  auto switched = grader::grade(options, std::move(prepared));
  EXPECT_EQ(switched.verdict, grader::Verdict::passed) << essentials(switched);
  EXPECT_FALSE(switched.compile_ahead);

  // A rebuild after the grade was prepared (here: the runner's time moved)
  // makes what it started stale: the grade starts afresh.
  const auto runner = grader::load_toolchain(kBuild / "toolchain.txt").runner;
  prepared = grader::prepare_grade(options, true);
  const auto built = fs::last_write_time(runner);
  fs::last_write_time(runner, built + std::chrono::seconds(10));
  auto rebuilt = grader::grade(options, std::move(prepared));
  fs::last_write_time(runner, built);
  EXPECT_EQ(rebuilt.verdict, grader::Verdict::passed) << essentials(rebuilt);
  EXPECT_FALSE(rebuilt.compile_ahead);
  fs::remove_all(dir);
}

// Every grade's link is started before its object exists and reads the
// object from a pipe (early_link.h): that must give the shared object a link
// of the file gives, say what goes wrong in the file's name, and write
// nothing when it is never given an object.
TEST(EarlyLink, LinksAsTheFileWouldNamesItAndLeavesNothingUnused) {
  const auto toolchain = grader::load_toolchain(kBuild / "toolchain.txt");
  if (toolchain.link_command.empty()) GTEST_SKIP() << "the linker's command is unknown here: nothing is linked early";
  const auto exercise = grader::load_exercise(kRoot / "exercises/exercise_sdpa");
  const auto sandbox = grader::detect_sandbox(grader::SandboxMode::automatic, toolchain.seccomp);
  const grader::ScratchFolder scratch(fs::temp_directory_path(), false, sandbox.drop_to_nobody);
  const auto& dir = scratch.path();
  const auto confinement = grader::grade_confinement(toolchain, exercise, kRoot, kBuild, dir, {}, dir);
  const grader::Step step{exercise, dir, sandbox, confinement};
  const auto library = toolchain.drivers.at(exercise.id);
  const auto pch = grader::precompiled_header(toolchain, exercise, false);
  fs::copy_file(kRoot / "solutions/exercise_sdpa/sdpa.cpp", dir / "sdpa.cpp");
  auto compiled = step.run(grader::compiler_argv(toolchain, exercise, pch, dir / "sdpa.cpp", dir));
  ASSERT_TRUE(compiled.exited_cleanly()) << compiled.stderr_text;
  const auto object = dir / "submission.o";

  auto direct = step.run(grader::linker_argv(toolchain, library, pch, dir / "direct.so", object));
  ASSERT_TRUE(direct.exited_cleanly()) << direct.stderr_text;
  auto early = grader::EarlyLink::start(step, toolchain, library, pch, dir / "early.so");
  ASSERT_TRUE(early);
  EXPECT_EQ(early->output(), dir / "early.so");
  EXPECT_TRUE(early->waiting());
  auto linked = early->finish(read(object), object);
  ASSERT_TRUE(linked.exited_cleanly()) << linked.stderr_text;
  EXPECT_EQ(read(dir / "early.so"), read(dir / "direct.so")) << "the same bytes as a link of the file";

  // A file that includes all of LibTorch's API links against the library of
  // the API's compiled inline functions too, early or not.
  const auto api = grader::precompiled_header(toolchain, exercise, true);
  if (!toolchain.torch_api_library.empty() && grader::on_torch_module(toolchain, api)) {
    std::ofstream(dir / "sdpa_api.cpp", std::ios::binary) << "#include <torch/torch.h>\n" << read(dir / "sdpa.cpp");
    auto api_compiled = step.run(grader::compiler_argv(toolchain, exercise, api, dir / "sdpa_api.cpp", dir));
    ASSERT_TRUE(api_compiled.exited_cleanly()) << api_compiled.stderr_text;
    auto argv = grader::linker_argv(toolchain, library, api, dir / "api_direct.so", object);
    EXPECT_NE(std::find(argv.begin(), argv.end(), toolchain.torch_api_library), argv.end());
    ASSERT_TRUE(step.run(argv).exited_cleanly());
    auto api_early = grader::EarlyLink::start(step, toolchain, library, api, dir / "api_early.so");
    ASSERT_TRUE(api_early);
    ASSERT_TRUE(api_early->finish(read(object), object).exited_cleanly());
    EXPECT_EQ(read(dir / "api_early.so"), read(dir / "api_direct.so"));
  }

  auto refused = grader::EarlyLink::start(step, toolchain, library, pch, dir / "refused.so");
  ASSERT_TRUE(refused);
  auto failed = refused->finish("not an object file", object);
  EXPECT_FALSE(failed.exited_cleanly());
  EXPECT_NE(failed.stderr_text.find(object.string()), std::string::npos) << failed.stderr_text;
  EXPECT_EQ(failed.stderr_text.find("/dev/fd/3"), std::string::npos) << failed.stderr_text;
  EXPECT_FALSE(fs::exists(dir / "refused.so"));

  grader::EarlyLink::start(step, toolchain, library, pch, dir / "unused.so").reset();
  EXPECT_FALSE(fs::exists(dir / "unused.so")) << "stopped before it was given an object";
}

}  // namespace
}  // namespace corpus
