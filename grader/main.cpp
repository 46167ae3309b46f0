// grade: the command line. Parses the arguments once (cli/command_line.h),
// runs the command the first word names (cli/commands.h) or else grades that
// exercise, and is the one place that turns errors into messages and exit codes.
#include <sys/prctl.h>

#include <CLI/CLI.hpp>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <iostream>

#include "cli/batch.h"
#include "cli/command_line.h"
#include "cli/commands.h"
#include "base/command_clock.h"
#include "base/errors.h"
#include "report/formats.h"
#include "judge/process.h"
#include "judge/stop.h"
#include "judge/zygote.h"

namespace {

int run(int argc, char** argv) {
  using namespace grader::cli;
  grader::command_started();  // pinned now where the grade script did not give it
  std::signal(SIGPIPE, SIG_IGN);  // a child that closes its pipe early must not kill the grader
  prctl(PR_SET_DUMPABLE, 0);      // learner code must not read or trace the grader's memory
  grader::become_subreaper();     // what a child leaves behind is reaped here, not left as a zombie
  CLI::App app;
  CommandLine line;
  define_options(app, line, usage_text());
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& error) {
    int code = app.exit(error);
    if (code == 0) return 0;
    // A CI job that asked for JSON gets JSON, whichever option was wrong.
    for (int i = 1; i < argc; ++i) {
      std::string arg = argv[i];
      if (arg == "--format=json" || (arg == "--format" && i + 1 < argc && std::string(argv[i + 1]) == "json")) {
        std::cout << grader::render_json_error(line.options.exercise, "usage_error", error.what());
        break;
      }
    }
    return grader::kExitUsage;
  }

  const auto& format = line.format;
  try {
    auto& options = line.options;
    options.project_root = std::filesystem::absolute(line.root);
    options.build_dir = std::filesystem::absolute(line.build);
    options.use_cache = !line.no_cache;
    options.speed = !line.no_speed;
    const auto* command = find_command(options.exercise);
    return command ? command->run(line) : grade_command(line);
  } catch (const grader::Error& error) {
    std::cerr << "grade: " << error.what() << "\n";
    const auto verdict = error_verdict(error.exit_code());
    if (grader::errors_on_stdout(format))
      std::cout << grader::render_error(line.options.exercise, verdict, error.what(), format);
    try_report_error(line, verdict, error.what());
    return error.exit_code();
  } catch (const std::exception& error) {
    std::cerr << "grade: internal error: " << error.what() << "\n";
    const std::string message = std::string("internal error: ") + error.what();
    if (grader::errors_on_stdout(format))
      std::cout << grader::render_error(line.options.exercise, "grader_error", message, format);
    try_report_error(line, "grader_error", message);
    return grader::kExitGraderFault;
  }
}

}  // namespace

int main(int argc, char** argv) {
  const int code = run(argc, argv);
  grader::close_zygotes();     // each ends at once; their cgroups go with them
  grader::wait_if_stopping();  // Ctrl-C came: the stop ends the process with its own status (stop.h)
  // Everything of ours is written and closed by now. A normal exit would run
  // LibTorch's static destructors, which unregister every operator: about
  // 0.3 s of a grade's wait, for nothing.
  std::cout.flush();
  std::cerr.flush();
  std::fflush(nullptr);
  std::_Exit(code);
}
