// grade: the command line. Parses the arguments once (cli/command_line.h),
// runs the command the first word names (cli/commands.h) or else grades that
// exercise, and is the one place that turns errors into messages and exit codes.
#include <sys/prctl.h>
#include <unistd.h>

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
#include "base/profile.h"
#include "report/formats.h"
#include "judge/process.h"
#include "judge/stop.h"
#include "judge/zygote.h"
#include "warm/server.h"

namespace {

// Set in a process the warm grader forked for a command (warm/server.h).
bool handed_over = false;

// What came before main, where the grade script said when it started and
// when it exec'd this program (GRADE_EXECED): its own checks, then the
// process's start with LibTorch's load (or the hand-over to the warm grader).
void record_start_up() {
  namespace profile = grader::profile;
  const double at_main = profile::now();
  const char* execed = std::getenv("GRADE_EXECED");
  if (at_main <= 0 || !execed) return;  // no start given: the table begins here
  char* end = nullptr;
  const double exec_at = std::strtod(execed, &end) - grader::command_started();
  if (end == execed || exec_at < 0 || exec_at > at_main) return;
  profile::record("the grade script (packages, the build's freshness)", 0, exec_at);
  profile::record(handed_over ? "hand the command to the warm grader" : "start the grader (loading LibTorch's libraries)",
                  exec_at, at_main - exec_at);
}

int run(int argc, char** argv) {
  using namespace grader::cli;
  grader::command_started();  // pinned now where the grade script did not give it
  record_start_up();
  grader::profile::Span parsing("read the command line");
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
  parsing.end();
  // Printed last, whatever the command did: the table covers its whole time.
  struct ProfileAtEnd {
    bool wanted;
    ~ProfileAtEnd() {
      if (wanted) std::cerr << grader::profile::table("where this command's time went (--profile)");
    }
  } profile_at_end{line.profile};

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

// The end of a command: the zygotes closed, a stop waited for, every stream
// written. Its caller ends the process with _Exit: a normal exit would run
// LibTorch's static destructors, which unregister every operator: about
// 0.3 s of a grade's wait, for nothing.
int finish(int code) {
  grader::close_zygotes();     // each ends at once; their cgroups go with them
  grader::wait_if_stopping();  // Ctrl-C came: the stop ends the process with its own status (stop.h)
  std::cout.flush();
  std::cerr.flush();
  std::fflush(nullptr);
  return code;
}

// The commands' options, read as the command itself will read them, for the
// warm grader's warm-up (warm/server.h).
void warm_up(const grader::warm::Request& request) {
  using namespace grader::cli;
  grader::profile::restart_from_now();  // the server's own spans: none kept from one command to the next
  if (chdir(request.working_dir.c_str()) != 0) return;
  struct BackToRoot {  // the server holds no command's folder
    ~BackToRoot() { (void)!chdir("/"); }
  } back;
  std::vector<char*> argv;
  for (const auto& arg : request.argv) argv.push_back(const_cast<char*>(arg.c_str()));
  CLI::App app;
  CommandLine line;
  define_options(app, line, "");
  app.parse(static_cast<int>(argv.size()), argv.data());
  line.options.project_root = std::filesystem::absolute(line.root);
  line.options.build_dir = std::filesystem::absolute(line.build);
  warm_runner(line);
}

// grade --warm-server FOLDER [--ready-fd N]: the warm grader (warm/server.h),
// started by grader-client. Not for people: not in the help.
int warm_server(int argc, char** argv) {
  if (argc != 3 && !(argc == 5 && std::string(argv[3]) == "--ready-fd")) {
    std::cerr << "usage: grade --warm-server FOLDER [--ready-fd N]\n";
    return grader::kExitUsage;
  }
#ifdef GRADER_TORCH_HAS_CUDA
  // A CUDA context does not survive a fork, and finding a GPU would make one.
  // Said in the folder, so that clients stop starting a server here.
  grader::warm::say_unavailable(argv[2], "not with a CUDA LibTorch: each command starts its own grader");
  return 1;
#endif
  const std::string folder = std::filesystem::absolute(argv[2]).string();
  prctl(PR_SET_DUMPABLE, 0);  // as every grader: nothing of it is read or traced from outside
  (void)!chdir("/");
  const int ready_fd = argc == 5 ? std::atoi(argv[4]) : -1;
  grader::warm::ServerHooks hooks;
  hooks.run = [](int command_argc, char** command_argv) {
    handed_over = true;
    return finish(run(command_argc, command_argv));
  };
  hooks.warm_up = warm_up;
  return grader::warm::serve(folder, ready_fd, hooks);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc >= 2 && std::string(argv[1]) == "--warm-server") {
    const int code = warm_server(argc, argv);
    std::_Exit(code);
  }
  std::_Exit(finish(run(argc, argv)));
}
