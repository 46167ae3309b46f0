#include "cli/commands.h"

#include <fmt/format.h>

#include <algorithm>
#include <iostream>
#include <sstream>

#include "checks/kit/kit.h"
#include "checks/verify.h"
#include "cli/batch.h"
#include "cli/new_exercise.h"
#include "base/command_clock.h"
#include "base/errors.h"
#include "base/profile.h"
#include "exercise/exercise.h"
#include "report/formats.h"
#include "learner/interview.h"
#include "learner/learner.h"
#include "learner/progress.h"
#include "report/report.h"
#include "judge/stop.h"
#include "learner/watch.h"

namespace grader::cli {
namespace {

// A grade of the learner's own file is their progress (grade list); failing
// to save it is said, never a reason to fail the grade.
void record_progress(const fs::path& file, const GradeReport& report) {
  try {
    auto notice = record_grade(file, report);
    if (!notice.empty()) std::cerr << "grade: " << notice << "\n";
  } catch (const std::exception& error) {
    std::cerr << "grade: your progress was not saved: " << error.what() << "\n";
  }
}

int list_command(CommandLine& line) { return list(line.options.project_root); }
int show_command(CommandLine& line) { return show(line.options.project_root, line.paths, line.show_checks); }
int hint_command(CommandLine& line) { return hint(line.options.project_root, line.paths, line.focus); }
int solution_command(CommandLine& line) { return solution(line.options.project_root, line.paths, line.reveal); }
int reset_command(CommandLine& line) { return reset(line.options.project_root, line.paths, line.blank); }
int merge_command(CommandLine& line) { return merge(line.paths, line.gradebook); }

int sandbox_command(CommandLine& line) {
  ready_to_grade(line, /*announce=*/false);
  std::cout << line.options.sandbox.describe() << "\n";
  return line.options.sandbox.isolating() ? 0 : 1;
}

int watch_command(CommandLine& line) {
  ready_to_grade(line);
  auto& options = line.options;
  const auto exercise = named_exercise(options.project_root, line.paths, "watch");
  options.exercise = exercise.id;
  if (line.submissions.size() > 1) throw UsageError("watch: one --submission at most");
  WatchOptions watching;
  watching.file = line.submissions.empty() ? exercise.learner_file() : fs::absolute(line.submissions.front());
  if (!line.submissions.empty()) options.submission = watching.file;
  watching.manual = line.manual;
  watching.color = use_color(line.color);
  watching.profile = line.profile;
  if (line.submissions.empty()) {
    watching.on_grade = [progress = progress_file(options.project_root)](const GradeReport& report) {
      record_progress(progress, report);
    };
  }
  return watch(options, watching);
}

int interview_command(CommandLine& line) {
  if (line.readiness) return interview_report(line.options.project_root, std::cout, line.format);
  // What the grade script asks before it builds the one exercise an
  // interview without a named exercise needs (reads only).
  if (line.suggest) {
    std::string notice, why;
    const auto progress = load_progress(progress_file(line.options.project_root), &notice);
    std::cout << suggest_exercise(line.options.project_root, progress, why) << "\t" << why << "\n";
    return 0;
  }
  ready_to_grade(line);
  auto& options = line.options;
  auto& interviewing = line.interviewing;
  if (line.paths.size() > 1) throw UsageError("interview: name one exercise at most (see: grade list)");
  if (line.submissions.size() > 1) throw UsageError("interview: one --submission at most");
  options.exercise = line.paths.empty() ? "" : line.paths.front();
  if (!line.submissions.empty()) options.submission = fs::absolute(line.submissions.front());
  if (!line.answers.empty()) interviewing.answers = fs::absolute(line.answers);
  interviewing.color = use_color(line.color);
  interviewing.record_grade = line.submissions.empty() && interviewing.resume;
  return interview(options, interviewing, std::cout);
}

int kinds_command(CommandLine&) {
  for (const auto& kind : kit::kinds()) {
    std::cout << kind.name << (kind.measurement ? " (measures)" : "") << "\n";
    std::istringstream words(kind.doc);
    std::string line = "   ", word;
    while (words >> word) {
      if (line.size() + word.size() + 1 > 88) {
        std::cout << line << "\n";
        line = "   ";
      }
      line += " " + word;
    }
    std::cout << line << "\n";
  }
  return 0;
}

int verify_command(CommandLine& line) {
  const auto& root = line.options.project_root;
  const auto id = one_exercise(line.paths, "verify-exercise");
  find_exercise_dir(root / "exercises", id);  // an unknown id: a usage error with suggestions
  size_t problems = 0;
  for (const auto& rule : verify_rules()) {
    std::vector<std::string> found;
    try {
      found = rule.run(root, id);
    } catch (const std::exception& error) {
      found = {std::string("cannot be checked: ") + error.what()};
    }
    std::cout << (found.empty() ? "ok      " : "PROBLEM ") << rule.name << ": " << rule.doc << "\n";
    for (const auto& problem : found) std::cout << "          - " << printable(problem) << "\n";
    problems += found.size();
  }
  std::cout << (problems == 0 ? id + ": ready\n" : fmt::format("{}: {} problem(s) to fix\n", id, problems));
  return problems == 0 ? 0 : 1;
}

int new_exercise_command(CommandLine& line) {
  const auto id = one_exercise(line.paths, "new-exercise");
  for (const auto& written : new_exercise(line.options.project_root, id)) {
    std::cout << "wrote " << written.string() << "\n";
  }
  std::cout << "next: fill in the TODOs, then ./grade verify-exercise " << id << " says what it still lacks\n";
  return 0;
}

int class_command(CommandLine& line) { return grade_command(line); }

}  // namespace

const std::vector<Command>& commands() {
  static const std::vector<Command> table = {
      {"class", "class DIR --results OUT [--shard i/n|auto]",
       "grade a class folder (one folder per student) into result files", class_command},
      {"merge", "merge OUT... --gradebook DIR",
       "merge the results of every shard into gradebook.csv + one JSON per student", merge_command},
      {"list", "list", "the exercises in learning order, with your progress", list_command},
      {"show", "show EXERCISE [--checks]", "the statement: the task and the interface (--checks: the steps and what is checked)",
       show_command},
      {"hint", "hint EXERCISE", "a hint, more detailed each time; first on what your last grade missed",
       hint_command},
      {"solution", "solution EXERCISE", "the commented model solution, once you have passed (or --reveal)",
       solution_command},
      {"reset", "reset EXERCISE [--blank]",
       "your file back to the starter (--blank: without the steps), after\nsaving it to a named backup",
       reset_command},
      {"watch", "watch EXERCISE", "grade again each time you save the file (Ctrl-C stops; --manual: Enter)",
       watch_command},
      {"interview", "interview [EXERCISE]",
       "a timed mock interview: the task, a grade on submit, follow-up questions\non what the grade found "
       "(--minutes N, --answers FILE); --report: readiness\nFrom a fresh copy of the starter; --resume: your own "
       "file as it is",
       interview_command},
      {"sandbox", "sandbox", "say what isolates learner code here (exit 0: complete)", sandbox_command},
      {"kinds", "kinds", "the kit's check kinds an exercise.yaml can use, with what each checks", kinds_command},
      {"new-exercise", "new-exercise ID",
       "write the skeleton of a new exercise: its folder, check code, solution\nand corpus, from templates/new-exercise/", new_exercise_command},
      {"verify-exercise", "verify-exercise ID",
       "check an exercise as a whole: its parts, its corpus's coverage, its\nmistakes (exit 0: ready)",
       verify_command},
  };
  return table;
}

const Command* find_command(const std::string& name) {
  const auto& table = commands();
  auto found = std::find_if(table.begin(), table.end(), [&](const Command& c) { return c.name == name; });
  return found == table.end() ? nullptr : &*found;
}

std::string usage_text() {
  std::string text =
      "Grades a LibTorch implementation of a transformer building block.\n"
      "  grade EXERCISE                  grade the learner file in exercises/EXERCISE/\n"
      "  grade EXERCISE --submission F   grade any file\n"
      "  grade EXERCISE --submission DIR --jobs N\n"
      "                                  grade many files in parallel: one table (or JSON array)\n"
      "  grade EXERCISE --seeds 1,2,3    grade on several seeds: does a verdict depend on the inputs drawn?\n";
  const std::string indent(34, ' ');
  for (const auto& command : commands()) {
    auto usage = "  grade " + command.usage;
    text += usage.size() < indent.size() ? usage + std::string(indent.size() - usage.size(), ' ') : usage + "\n" + indent;
    std::istringstream lines(command.help);
    bool first = true;
    for (std::string help_line; std::getline(lines, help_line); first = false) {
      text += (first ? "" : indent) + help_line + "\n";
    }
  }
  text +=
      "  ./grade package gradescope|exercism|prairielearn EXERCISE... --to DIR\n"
      "                                  what a grading platform runs: its entry point and the grader's sources";
  return text;
}

namespace {

// Whether `line` grades many submissions (a class, a folder, several files, seeds).
bool grades_many(const CommandLine& line, const std::vector<fs::path>& files) {
  return line.options.exercise == "class" || files.size() > 1 || !line.results.empty() || !line.shard_text.empty() ||
         !line.seeds.empty() ||
         std::any_of(line.submissions.begin(), line.submissions.end(),
                     [](const std::string& s) { return fs::is_directory(s); });
}

}  // namespace

void warm_runner(CommandLine& line) {
  if (find_command(line.options.exercise) || !line.paths.empty()) return;
  ready_to_grade(line, false);
  const auto files = expand_submissions(line.submissions);
  if (grades_many(line, files)) return;
  auto options = line.options;
  if (!files.empty()) options.submission = files.front();
  prepare_grade(options, false);  // dropped: its zygote stays (judge/zygote.h)
}

int grade_command(CommandLine& line) {
  auto files_out = ready_to_grade(line);
  auto& options = line.options;
  stop_cleanly_on_signals();  // Ctrl-C from here: said, and nothing left behind (stop.h)
  const bool class_mode = options.exercise == "class";
  if (!class_mode && !line.paths.empty()) {
    throw UsageError("unexpected argument '" + line.paths.front() +
                     "' (folders of submissions go after --submission)");
  }
  auto files = expand_submissions(line.submissions);
  if (grades_many(line, files)) {
    if (line.format != "text" && line.format != "json") {
      throw UsageError(
          "a batch prints one table (text) or one JSON array (json); the other formats go to files, one per "
          "submission (--output FORMAT=FOLDER; a class's go to --results)");
    }
    line.report_error = nullptr;  // its --output values are folders
    return grade_many({class_mode, line.paths, files, line.submissions, line.results, line.shard_text,
                       line.class_exercises, line.jobs, line.format, files_out, line.seeds},
                      options);
  }
  if (!files.empty()) options.submission = files.front();
  options.figures = draws_figures(line.format) || std::any_of(files_out.begin(), files_out.end(), [](const auto& out) {
                      return draws_figures(out.first);
                    });
  auto report = grade(options);
  profile::Span reporting("write the report");
  if (line.submissions.empty()) record_progress(progress_file(options.project_root), report);
  report.command_seconds = seconds_since_command();  // what the learner waited, start-up included
  std::cout << render(report, line.format, use_color(line.color) && line.format == "text");
  for (const auto& [fmt_name, path] : files_out) write_report_file(path, render(report, fmt_name));
  reporting.end();
  return exit_code_for(report.verdict);
}

}  // namespace grader::cli
