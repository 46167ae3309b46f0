// What the command line asked for: every option of `grade`, parsed once
// (define_options), for whichever command runs (commands.h).
#pragma once

#include <CLI/CLI.hpp>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "judge/grade.h"
#include "learner/interview.h"

namespace grader::cli {

struct CommandLine {
  GradeOptions options;  // options.exercise: the first word (a command or an exercise id)
  std::vector<std::string> paths;        // the words after it
  std::vector<std::string> submissions;  // --submission, as given
  std::string format = "text", color = "auto", sandbox_mode = "auto";
  std::string root = ".", build = "build";
  std::string results, shard_text, gradebook, focus, answers;
  std::vector<std::string> class_exercises, outputs;
  int jobs = 1;
  uint64_t seed = 0;
  std::vector<uint64_t> seeds;
  bool reveal = false, manual = false, show_checks = false, blank = false, readiness = false, suggest = false;
  bool no_speed = false, no_cache = false;
  bool profile = false;  // --profile: where the command's time went, on standard error at its end
  InterviewOptions interviewing;
  double time_limit = 0, case_limit = 0, memory_limit = 0, output_limit = 0;
  // Set by define_options; after parsing, whether each was given.
  CLI::Option *format_option = nullptr, *seed_option = nullptr, *time_option = nullptr, *case_option = nullptr,
              *memory_option = nullptr, *output_option = nullptr;
  // Writes the report files asked for (--output) when the grade fails; set
  // once they are known (ready_to_grade).
  std::function<void(const std::string& verdict, const std::string& message)> report_error;
};

// Every option and positional of `grade`, bound to `line`; `usage` is the
// help's description (the commands, commands.cpp).
void define_options(CLI::App& app, CommandLine& line, const std::string& usage);

// Turns what was parsed into line.options (root, build, limits, seed) and
// the --output files; the report files are then written even when the grade
// fails. Detects the sandbox; refuses or warns where it cannot isolate.
// What every command that grades does first.
std::vector<std::pair<std::string, std::filesystem::path>> ready_to_grade(CommandLine& line, bool announce = true);

// --color: always beats NO_COLOR (no-color.org: a per-run option overrides it).
bool use_color(const std::string& color);

// The report files of a grade that failed, where they can be written.
void try_report_error(const CommandLine& line, const std::string& verdict, const std::string& message);

}  // namespace grader::cli
