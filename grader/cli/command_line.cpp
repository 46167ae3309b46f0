#include "cli/command_line.h"

#include <unistd.h>

#include <cstdlib>
#include <iostream>

#include "base/errors.h"
#include "base/profile.h"
#include "report/formats.h"
#include "judge/sandbox.h"
#include "judge/toolchain.h"

namespace grader::cli {

void define_options(CLI::App& app, CommandLine& line, const std::string& usage) {
  app.description(usage);
  app.name("grade");
  app.add_option("EXERCISE", line.options.exercise,
                 "exercise id (see: grade list), or one of the commands above")
      ->required();
  app.add_option("paths", line.paths,
                 "class: the class folder; merge: the results folder(s); the other commands: the exercise");
  app.add_option("--results", line.results,
                 "write one result file per submission under this folder (<student>/<exercise>.json) and a manifest "
                 "of the shard");
  app.add_option("--shard", line.shard_text,
                 "i/n: grade only shard i of n of the batch or class (1 <= i <= n); auto: take i and n from the "
                 "Slurm array, Kubernetes Indexed Job or GitLab parallel job running this");
  app.add_option("--exercise", line.class_exercises, "class: grade only this exercise (repeat it for several)");
  app.add_option("--gradebook", line.gradebook, "merge: the folder the gradebook goes to");
  app.add_option("--focus", line.focus, "hint: a hint on this focus point (ids: the exercise's exercise.yaml)");
  app.add_flag("--manual", line.manual, "watch: grade again when you press Enter, not when the file is saved");
  app.add_flag("--reveal", line.reveal, "solution: show the model solution before you have passed");
  app.add_flag("--blank", line.blank, "reset: the blank starter (the interface without the steps), to practise from");
  app.add_flag("--checks", line.show_checks, "show: also the steps, what the grader checks and the follow-up questions");
  app.add_flag("--resume", line.interviewing.resume,
               "interview: work on your own file as it is, not on a fresh copy of the starter");
  app.add_option("--minutes", line.interviewing.minutes, "interview: the time allowed for the code (default 45)")
      ->check(CLI::Range(0.01, 600.0));
  app.add_option("--answers", line.answers,
                 "interview: read your input from this file (first 'submit' or 'wait', then one answer per line)");
  app.add_flag("--report", line.readiness, "interview: your readiness per focus point across interviews");
  app.add_flag("--suggest", line.suggest,
               "interview: print the exercise an interview would start with (its id, then why) and stop");
  app.add_option("--submission", line.submissions,
                 "a learner file to grade (default: the one in exercises/); repeat it, or give a folder, for a batch");
  app.add_option("--jobs", line.jobs, "grade a batch with this many grades in parallel")->check(CLI::Range(1, 64));
  line.format_option = app.add_option("--format", line.format,
                 "report format on standard output: text, json, html (one self-contained page with heatmaps of your "
                 "attention weights beside the reference's), or a grading platform's: exercism, gradescope, "
                 "prairielearn, junit, classroom (GitHub Classroom's autograding result)")
      ->check(CLI::IsMember(grader::report_formats()));
  app.add_option("--output", line.outputs,
                 "FORMAT=FILE: also write the report in FORMAT to FILE (repeat it for several formats); a bare FILE "
                 "takes --format's format (standard output then gets the text report) or its extension's (.html, "
                 ".json, .xml: junit, .txt); in a batch, FORMAT=FOLDER: one file per submission, named after it");
  line.seed_option = app.add_option("--seed", line.seed, "replay the random inputs of an earlier grade");
  app.add_option("--seeds", line.seeds,
                 "S1,S2,...: grade each submission on each of these seeds, one report each (to see whether a "
                 "verdict depends on the inputs drawn); the seeds of one submission share one runner")
      ->delimiter(',')
      ->excludes(line.seed_option);
  app.add_option("--color", line.color, "colour the text report (auto: on a terminal, unless NO_COLOR is set)")
      ->check(CLI::IsMember({"auto", "always", "never"}));
  app.add_option("--within", line.options.within,
                 "refuse a submission whose real path (links resolved) is not inside this folder (what a grading "
                 "platform's entry point gives: a link in the hand-in must not lead to the grader's files)");
  app.add_option("--visibility", line.options.visibility,
                 "gradescope: when the student sees the tests and the score (visible, hidden, after_due_date, "
                 "after_published)")
      ->check(CLI::IsMember({"visible", "hidden", "after_due_date", "after_published"}));
  app.add_option("--root", line.root, "the project folder (holds exercises/)");
  app.add_option("--build-dir", line.build, "the build folder (holds toolchain.txt)");
  line.time_option = app.add_option("--time-limit", line.time_limit, "seconds the checks may run (default: the exercise's)")
                          ->check(CLI::Range(1.0, 3600.0));
  line.case_option = app.add_option("--case-time-limit", line.case_limit,
                                     "seconds any one case may take at least (default 2; 10 on a GPU); "
                                     "a case may take 50 times the reference's time where that is longer")
                          ->check(CLI::Range(0.1, 3600.0));
  line.memory_option = app.add_option("--memory-limit", line.memory_limit, "MB of memory the checks may use")
                            ->check(CLI::Range(64.0, 1048576.0));
  line.output_option = app.add_option("--output-limit", line.output_limit, "KB the checks may print, per stream")
                            ->check(CLI::Range(1.0, 1048576.0));
  app.add_option("--sandbox", line.sandbox_mode,
                 "auto: isolate where the machine allows, else limits only with a notice; strict: refuse to grade "
                 "without full isolation (for CI); off: limits only")
      ->check(CLI::IsMember({"auto", "strict", "off"}));
  app.add_option("--device", line.options.device,
                 "where the learner's code runs: cuda (a GPU; refused without one), cpu, or auto (default: cuda "
                 "where this LibTorch sees a CUDA device)")
      ->check(CLI::IsMember({"auto", "cpu", "cuda"}));
  app.add_flag("--no-speed", line.no_speed,
               "on a GPU, skip timing a passed submission against the unfused and fused attention (informational)");
  app.add_flag("--keep-scratch", line.options.keep_scratch, "keep the scratch folder of this grade for inspection");
  app.add_flag("--no-cache", line.no_cache, "compile even an unchanged submission again");
  app.add_flag("--profile", line.profile,
               "print where this command's time went, phase by phase, on standard error after the report");
}

std::vector<std::pair<std::string, std::filesystem::path>> ready_to_grade(CommandLine& line, bool announce) {
  auto& options = line.options;
  // --output FORMAT=FILE or FILE (formats.h: output_target), checked before
  // any grade runs. A bare FILE that took --format's format leaves standard
  // output the text report (`--format html --output r.html` writes the page to r.html).
  const std::string format_option = *line.format_option ? line.format : "";
  std::vector<std::pair<std::string, std::filesystem::path>> files_out;
  for (const auto& output : line.outputs) {
    auto target = output_target(output, format_option);
    if (target.took_format_option) line.format = "text";
    files_out.emplace_back(target.format, target.file);
  }
  // Whatever happens from here, the files asked for are written (a CI job
  // reads its JUnit file even when the grader fails). By value: the handlers
  // that call it run after this function's locals are gone.
  line.report_error = [files_out, exercise = options.exercise](const std::string& verdict,
                                                               const std::string& message) {
    for (const auto& [fmt_name, path] : files_out) write_report_file(path, render_error(exercise, verdict, message, fmt_name));
  };
  if (*line.seed_option) options.seed = line.seed;
  if (*line.time_option) options.run_seconds = line.time_limit;
  if (*line.case_option) options.case_seconds = line.case_limit;
  if (*line.memory_option) options.memory_mb = line.memory_limit;
  if (*line.output_option) options.output_kb = line.output_limit;

  profile::Span span("find what isolates learner code here");
  auto toolchain = load_toolchain(options.build_dir / "toolchain.txt");
  options.sandbox = detect_sandbox(parse_sandbox_mode(line.sandbox_mode), toolchain.seccomp);
  span.end();
  if (announce && !options.sandbox.isolating()) {
    if (options.sandbox.mode == SandboxMode::strict) {
      throw GraderFault("--sandbox strict: cannot isolate learner code here: " + options.sandbox.describe() +
                        " (docs/sandbox.md)");
    }
    std::cerr << "grade: notice: " << options.sandbox.describe() << "\n";
  }
  return files_out;
}

bool use_color(const std::string& color) {
  const char* no_color = std::getenv("NO_COLOR");
  return color == "always" || (color == "auto" && isatty(STDOUT_FILENO) && !(no_color && *no_color));
}

void try_report_error(const CommandLine& line, const std::string& verdict, const std::string& message) {
  if (!line.report_error) return;
  try {
    line.report_error(verdict, message);
  } catch (const std::exception& error) {
    std::cerr << "grade: " << error.what() << "\n";
  }
}

}  // namespace grader::cli
