// grade: the command line. Parses arguments, runs one grade (or lists the
// exercises), prints the report, and turns errors into messages and exit codes.
#include <sys/prctl.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <csignal>
#include <iostream>

#include "errors.h"
#include "exercise.h"
#include "grade.h"
#include "report.h"

int main(int argc, char** argv) {
  std::signal(SIGPIPE, SIG_IGN);  // a child that closes its pipe early must not kill the grader
  prctl(PR_SET_DUMPABLE, 0);      // learner code must not read or trace the grader's memory
  CLI::App app{
      "Grades a LibTorch implementation of a transformer building block.\n"
      "  grade EXERCISE                  grade the learner file in exercises/EXERCISE/\n"
      "  grade EXERCISE --submission F   grade any file\n"
      "  grade list                      list the exercises"};
  app.name("grade");
  grader::GradeOptions options;
  std::string submission, format = "text", color = "auto";
  uint64_t seed = 0;
  std::string root = ".", build = "build";
  app.add_option("exercise", options.exercise, "exercise id (see: grade list), or 'list'")->required();
  app.add_option("--submission", submission, "the learner file to grade (default: the one in exercises/)");
  app.add_option("--format", format, "report format")->check(CLI::IsMember({"text", "json"}));
  auto* seed_option = app.add_option("--seed", seed, "replay the random inputs of an earlier grade");
  app.add_option("--color", color, "colour the text report")->check(CLI::IsMember({"auto", "always", "never"}));
  app.add_option("--root", root, "the project folder (holds exercises/)");
  app.add_option("--build-dir", build, "the build folder (holds toolchain.txt)");
  double time_limit = 0;
  auto* time_option = app.add_option("--time-limit", time_limit, "seconds the checks may run (default: the exercise's)")
                          ->check(CLI::Range(1.0, 3600.0));
  app.add_flag("--keep-scratch", options.keep_scratch, "keep the scratch folder of this grade for inspection");
  bool no_cache = false;
  app.add_flag("--no-cache", no_cache, "compile even an unchanged submission again");

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& error) {
    int code = app.exit(error);
    return code == 0 ? 0 : grader::kExitUsage;
  }

  try {
    options.project_root = std::filesystem::absolute(root);
    options.build_dir = std::filesystem::absolute(build);
    options.use_cache = !no_cache;
    if (options.exercise == "list") {
      for (const auto& id : grader::list_exercises(options.project_root / "exercises")) {
        auto exercise = grader::load_exercise(options.project_root / "exercises" / id);
        std::cout << id << "  " << exercise.title << "\n";
      }
      return 0;
    }
    if (!submission.empty()) options.submission = submission;
    if (*seed_option) options.seed = seed;
    if (*time_option) options.run_seconds = time_limit;
    auto report = grader::grade(options);
    if (format == "json") {
      std::cout << grader::render_json(report);
    } else {
      bool use_color = color == "always" || (color == "auto" && isatty(STDOUT_FILENO));
      std::cout << grader::render_text(report, use_color);
    }
    return grader::exit_code_for(report.verdict);
  } catch (const grader::Error& error) {
    std::cerr << "grade: " << error.what() << "\n";
    if (format == "json") {
      auto verdict = error.exit_code() == grader::kExitGraderFault ? "grader_error" : "usage_error";
      std::cout << grader::render_json_error(options.exercise, verdict, error.what());
    }
    return error.exit_code();
  } catch (const std::exception& error) {
    std::cerr << "grade: internal error: " << error.what() << "\n";
    return grader::kExitGraderFault;
  }
}
