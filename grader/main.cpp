// grade: the command line. Parses arguments, runs one grade or a batch (in
// parallel with --jobs), or lists the exercises, or reports the sandbox;
// prints the report(s), and turns errors into messages and exit codes.
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <atomic>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <iostream>
#include <map>
#include <thread>

#include "classroom.h"
#include "errors.h"
#include "exercise.h"
#include "formats.h"
#include "grade.h"
#include "interview.h"
#include "learner.h"
#include "process.h"
#include "progress.h"
#include "report.h"
#include "stop.h"
#include "toolchain.h"
#include "watch.h"
#include "zygote.h"

namespace {
namespace fs = std::filesystem;

// Each --submission value: a file, or a folder whose *.cpp files are graded.
std::vector<fs::path> expand_submissions(const std::vector<std::string>& values) {
  std::vector<fs::path> files;
  for (const auto& value : values) {
    if (fs::is_directory(value)) {
      std::vector<fs::path> found;
      for (const auto& entry : fs::directory_iterator(value)) {
        if (entry.path().extension() != ".cpp") continue;
        // Links are refused, not followed (as for a single submission).
        if (entry.is_symlink()) {
          throw grader::UsageError(entry.path().string() +
                                   " is a symbolic link: a batch grades the files in the folder, not what links "
                                   "point to (remove the link or copy the file)");
        }
        if (entry.is_regular_file()) found.push_back(fs::absolute(entry.path()));
      }
      if (found.empty()) throw grader::UsageError("no .cpp files in the folder " + value);
      std::sort(found.begin(), found.end());
      files.insert(files.end(), found.begin(), found.end());
    } else {
      files.push_back(fs::absolute(value));
    }
  }
  return files;
}

struct BatchItem {
  grader::ClassItem item;        // the student and exercise, and the file (empty: none)
  std::string label;             // how the table names it
  std::optional<uint64_t> seed;  // --seeds: the seed of this item's grade
  std::optional<grader::GradeReport> report;
  std::string error;  // a grader or usage error for this submission
  int exit_code = 0;
};

// Grades every item with `jobs` workers; each grade is its own set of child
// processes, sandboxed like a single grade, so one cannot affect another.
// An item without a submission is not graded. Items of one submission on
// several seeds (--seeds, adjacent) are graded together (grade_on_seeds).
void grade_batch(std::vector<BatchItem>& items, const grader::GradeOptions& base, int jobs) {
  std::vector<std::pair<size_t, size_t>> groups;  // [first, last) of items graded together
  for (size_t i = 0; i < items.size(); ++i) {
    if (!groups.empty() && items[i].seed && items[i - 1].seed &&
        items[i].item.submission == items[i - 1].item.submission &&
        items[i].item.exercise == items[i - 1].item.exercise) {
      groups.back().second = i + 1;
    } else {
      groups.emplace_back(i, i + 1);
    }
  }
  std::atomic<size_t> next{0};
  auto worker = [&] {
    for (size_t g = next++; g < groups.size(); g = next++) {
      const auto [first, last] = groups[g];
      auto& head = items[first];
      if (head.item.submission.empty() || !head.item.invalid.empty()) {
        head.exit_code = grader::kExitNotPassed;
        continue;
      }
      auto options = base;
      options.exercise = head.item.exercise;
      options.submission = head.item.submission;
      try {
        std::vector<grader::GradeReport> reports;
        if (head.seed) {
          std::vector<uint64_t> seeds;
          for (size_t i = first; i < last; ++i) seeds.push_back(*items[i].seed);
          reports = grader::grade_on_seeds(options, seeds);
        } else {
          reports.push_back(grader::grade(options));
        }
        for (size_t i = first; i < last; ++i) {
          items[i].report = std::move(reports[i - first]);
          items[i].exit_code = grader::exit_code_for(items[i].report->verdict);
        }
      } catch (const grader::InvalidSubmission& error) {
        // The student's input, not the grader or the command: that student's row.
        for (size_t i = first; i < last; ++i) {
          items[i].item.invalid = error.what();
          items[i].exit_code = grader::kExitNotPassed;
        }
      } catch (const grader::Error& error) {
        for (size_t i = first; i < last; ++i) {
          items[i].error = error.what();
          items[i].exit_code = error.exit_code();
        }
      } catch (const std::exception& error) {
        for (size_t i = first; i < last; ++i) {
          items[i].error = std::string("internal error: ") + error.what();
          items[i].exit_code = grader::kExitGraderFault;
        }
      }
    }
  };
  std::vector<std::thread> workers;
  for (int j = 0; j < std::max(1, jobs); ++j) workers.emplace_back(worker);
  for (auto& thread : workers) thread.join();
}

std::string error_verdict(int exit_code) {
  return exit_code == grader::kExitGraderFault ? "grader_error" : "usage_error";
}

// One item of a batch in `format` (its report, or the error that kept it from one).
std::string item_report(const BatchItem& item, const std::string& format = "json") {
  if (item.report) return grader::render(*item.report, format);
  if (!item.item.invalid.empty()) {
    return grader::render_error(item.item.exercise, "invalid_submission", item.item.invalid, format);
  }
  return grader::render_error(item.item.exercise, error_verdict(item.exit_code),
                              item.item.submission.string() + ": " + item.error, format);
}

// --color: always beats NO_COLOR (no-color.org: a per-run option overrides it).
bool use_color(const std::string& color) {
  const char* no_color = std::getenv("NO_COLOR");
  return color == "always" || (color == "auto" && isatty(STDOUT_FILENO) && !(no_color && *no_color));
}

// A grade of the learner's own file is their progress (grade list); failing
// to save it is said, never a reason to fail the grade.
void record_progress(const fs::path& file, const grader::GradeReport& report) {
  try {
    auto notice = grader::record_grade(file, report);
    if (!notice.empty()) std::cerr << "grade: " << notice << "\n";
  } catch (const std::exception& error) {
    std::cerr << "grade: your progress was not saved: " << error.what() << "\n";
  }
}

// --output FORMAT=FILE or FILE (formats.h: output_target), checked before any
// grade runs. A bare FILE that took --format's format leaves standard output
// the text report (`--format html --output r.html` writes the page to r.html).
std::vector<std::pair<std::string, std::filesystem::path>> parse_outputs(const std::vector<std::string>& outputs,
                                                                         const std::string& format_option,
                                                                         std::string& stdout_format) {
  std::vector<std::pair<std::string, std::filesystem::path>> parsed;
  for (const auto& output : outputs) {
    auto target = grader::output_target(output, format_option);
    if (target.took_format_option) stdout_format = "text";
    parsed.emplace_back(target.format, target.file);
  }
  return parsed;
}

// The report files of a grade that failed, where they can be written.
void try_report_error(const std::function<void(const std::string&, const std::string&)>& report_error,
                      const std::string& verdict, const std::string& message) {
  if (!report_error) return;
  try {
    report_error(verdict, message);
  } catch (const std::exception& error) {
    std::cerr << "grade: " << error.what() << "\n";
  }
}

std::string batch_table(const std::vector<BatchItem>& items) {
  size_t width = 10;
  for (const auto& item : items) width = std::max(width, grader::printable(item.label).size());
  std::string out = fmt::format("{:<{}}  {:<18} {:>7}  {:>6}  {}\n", "submission", width, "verdict", "checks", "time",
                                "missed focus points / reason");
  size_t passed = 0;
  // Every cell that comes from a submission (its file name, its messages) is made printable.
  for (const auto& item : items) {
    auto name = grader::printable(item.label);
    if (!item.item.invalid.empty()) {
      out += fmt::format("{:<{}}  {:<18} {:>7}  {:>6}  {}\n", name, width, "invalid_submission", "-", "-",
                         grader::printable(grader::capped(item.item.invalid, 160)));
      continue;
    }
    if (item.item.submission.empty()) {
      out += fmt::format("{:<{}}  {:<18} {:>7}  {:>6}  {}\n", name, width, "no_submission", "-", "-",
                         item.item.warnings.empty() ? std::string("no file for this exercise")
                                                    : grader::printable(item.item.warnings.front()));
      continue;
    }
    if (!item.report) {
      out += fmt::format("{:<{}}  {:<18} {:>7}  {:>6}  {}\n", name, width, error_verdict(item.exit_code), "-", "-",
                         grader::printable(item.error));
      continue;
    }
    const auto& report = *item.report;
    passed += report.verdict == grader::Verdict::passed;
    size_t ok = std::count_if(report.checks.begin(), report.checks.end(),
                              [](const auto& c) { return c.status == grader::CheckStatus::passed; });
    std::string missed;
    for (const auto& focus : report.focus_points) {
      if (focus.status == grader::FocusStatus::missed) missed += (missed.empty() ? "" : ", ") + focus.point.id;
    }
    if (missed.empty() && report.verdict != grader::Verdict::passed) {
      missed = grader::printable(grader::capped(report.summary, 100));
    }
    out += fmt::format("{:<{}}  {:<18} {:>7}  {:>5.1f}s  {}\n", name, width, grader::verdict_name(report.verdict),
                       report.checks.empty() ? "-" : fmt::format("{}/{}", ok, report.checks.size()),
                       report.total_seconds, missed);
  }
  out += fmt::format("{} of {} passed\n", passed, items.size());
  return out;
}

// `grade merge RESULTS... --gradebook DIR`: exit 0 when the gradebook is
// complete, 3 (a grading fault, never a learner's) when something is missing.
int merge(const std::vector<std::string>& results, const std::string& gradebook_dir) {
  if (results.empty()) throw grader::UsageError("merge: name the results folder(s) of `grade class --results`");
  if (gradebook_dir.empty()) throw grader::UsageError("merge: --gradebook DIR says where the gradebook goes");
  std::vector<fs::path> dirs(results.begin(), results.end());
  auto book = grader::merge_results(dirs);
  const fs::path out = gradebook_dir;
  // A folder of result files is a student's, not a gradebook's: never written over.
  std::error_code error;
  for (const auto& entry : fs::directory_iterator(out, error)) {
    if (entry.path().extension() == ".json") {
      throw grader::UsageError("merge: --gradebook " + out.string() + " holds " + entry.path().filename().string() +
                               ": choose a folder of its own (it gets gradebook.csv and students/)");
    }
  }
  fs::create_directories(out / "students");
  grader::write_report_file(out / "gradebook.csv", grader::gradebook_csv(book));
  for (const auto& [student, row] : book.students) {
    grader::write_report_file(out / "students" / (student + ".json"), grader::student_json(book, student));
  }
  std::cout << fmt::format("{} students, {} exercises: {}\n", book.students.size(), book.exercises.size(),
                           (out / "gradebook.csv").string());
  for (const auto& [student, row] : book.students) {
    if (grader::spreadsheet_formula(student)) {
      std::cerr << "grade merge: student id '" << grader::printable(student)
                << "' is written as it is; a spreadsheet may read that cell as a formula (import the CSV with "
                   "the first column as text)\n";
    }
  }
  for (const auto& problem : book.problems) std::cout << "incomplete: " << grader::printable(problem) << "\n";
  return book.problems.empty() ? 0 : grader::kExitGraderFault;
}

// What `grade class` and a batch were asked for.
struct ManyRequest {
  bool class_mode;
  const std::vector<std::string>& paths;        // class: the class folder
  std::vector<fs::path> files;                  // a batch's files
  const std::vector<std::string>& submissions;  // as given
  const std::string& results;                   // --results (empty: none)
  const std::string& shard_text;                // --shard (empty: all)
  const std::vector<std::string>& class_exercises;
  int jobs;
  const std::string& format;
  // --output FORMAT=DIR: each submission's report in FORMAT, in DIR.
  std::vector<std::pair<std::string, fs::path>> outputs;
  std::vector<uint64_t> seeds;  // --seeds: each submission on each (empty: once)
};

// A batch's report file of `submission` in `format`, inside `dir`
// (<stem>.seed-<N>.<ext> for the grade on one of --seeds).
fs::path batch_output_file(const fs::path& dir, const fs::path& submission, const std::string& format,
                           std::optional<uint64_t> seed = std::nullopt) {
  static const std::map<std::string, std::string> extensions = {
      {"text", ".txt"}, {"json", ".json"}, {"html", ".html"}, {"junit", ".xml"}};
  auto found = extensions.find(format);
  auto stem = submission.stem().string() + (seed ? ".seed-" + std::to_string(*seed) : std::string());
  return dir / (stem + (found != extensions.end() ? found->second : "." + format + ".json"));
}

// Each --output folder of a batch gets one file per submission, named after
// it: two submissions of one name would overwrite each other's.
void check_batch_outputs(const std::vector<std::pair<std::string, fs::path>>& outputs,
                         const std::vector<fs::path>& files) {
  if (outputs.empty()) return;
  std::map<std::string, fs::path> seen;
  for (const auto& file : files) {
    auto [at, added] = seen.emplace(file.stem().string(), file);
    if (!added) {
      throw grader::UsageError("--output FORMAT=FOLDER writes one file per submission, named after it: " +
                               at->second.string() + " and " + file.string() + " would share one");
    }
  }
  for (const auto& [format, dir] : outputs) {
    std::error_code error;
    fs::create_directories(dir, error);
    if (error || !fs::is_directory(dir)) {
      throw grader::UsageError("--output " + format + "=" + dir.string() + ": in a batch, a folder to write into" +
                               (error ? " (" + error.message() + ")" : std::string()));
    }
  }
}

// A class or a batch: its items (this shard's), graded in parallel, their
// result files and the shard's manifest, then one table or JSON array.
int grade_many(ManyRequest request, grader::GradeOptions options) {
  const bool class_mode = request.class_mode;
  auto& files = request.files;
  const auto& paths = request.paths;
  const auto& submissions = request.submissions;
  const auto& results = request.results;
  const auto& format = request.format;
  const auto& shard_text = request.shard_text;
  const auto& class_exercises = request.class_exercises;
  const int jobs = request.jobs;
  if (class_mode && !request.outputs.empty()) {
    throw grader::UsageError("class: the reports go to --results; --output is for one grade or a batch");
  }
  if (!request.seeds.empty() && (class_mode || !results.empty() || !shard_text.empty())) {
    throw grader::UsageError(
        "--seeds grades submissions of one exercise on several seeds; not with class, "
        "--results or --shard");
  }
  std::vector<grader::ClassItem> all;
  std::vector<grader::Exercise> exercises;
  if (class_mode) {
    if (paths.size() != 1) throw grader::UsageError("class: give one class folder (one folder per student)");
    if (!submissions.empty())
      throw grader::UsageError("class: the submissions are the class folder's; no --submission");
    auto ids = class_exercises.empty() ? grader::list_exercises(options.project_root / "exercises") : class_exercises;
    for (const auto& id : ids) {
      exercises.push_back(grader::load_exercise(grader::find_exercise_dir(options.project_root / "exercises", id)));
    }
    all = grader::class_items(fs::absolute(paths.front()), exercises);
    options.hide.push_back(fs::absolute(paths.front()));  // no submission may read another
  } else {
    exercises.push_back(
        grader::load_exercise(grader::find_exercise_dir(options.project_root / "exercises", options.exercise)));
    if (files.empty()) files.push_back(exercises.front().learner_file());
    if (!results.empty()) {
      all = grader::batch_items(files, options.exercise);
    } else {
      for (const auto& file : files) all.push_back({file.stem().string(), options.exercise, file, {}, {}});
    }
    for (const auto& file : files) options.hide.push_back(file.parent_path());  // no submission may read another
  }
  if (!results.empty()) {
    // Refused now, not after an hour of grading.
    std::error_code error;
    fs::create_directories(fs::path(results) / ".shards", error);
    if (error || ::access(results.c_str(), W_OK) != 0) {
      throw grader::UsageError("--results " + results + ": cannot write there" +
                               (error ? " (" + error.message() + ")" : std::string()));
    }
    options.hide.push_back(fs::absolute(results));  // no submission may read a result
  }
  std::sort(options.hide.begin(), options.hide.end());
  options.hide.erase(std::unique(options.hide.begin(), options.hide.end()), options.hide.end());
  grader::Shard shard;
  if (!shard_text.empty()) {
    shard = grader::parse_shard(shard_text, grader::process_environment());
    std::cerr << "grade: shard " << shard.describe() << " (from " << shard.source << ")\n";
  }
  std::vector<BatchItem> items;
  for (auto& item : grader::shard_of(all, shard)) {
    auto label = class_mode ? item.student + " " + item.exercise : item.submission.filename().string();
    if (request.seeds.empty()) {
      items.push_back({std::move(item), std::move(label), std::nullopt, std::nullopt, "", 0});
      continue;
    }
    for (auto seed : request.seeds) {
      items.push_back({item, label + " (seed " + std::to_string(seed) + ")", seed, std::nullopt, "", 0});
    }
  }
  check_batch_outputs(request.outputs, files);
  options.figures = std::any_of(request.outputs.begin(), request.outputs.end(),
                                [](const auto& out) { return grader::draws_figures(out.first); });
  grade_batch(items, options, jobs);
  for (const auto& item : items) {
    if (item.item.submission.empty()) continue;
    for (const auto& [out_format, dir] : request.outputs) {
      grader::write_report_file(batch_output_file(dir, item.item.submission, out_format, item.seed),
                                item_report(item, out_format));
    }
  }
  grader::reap_orphans();  // no grade is running now: whatever is left can go
  // The maxima are what a full answer earns where these grades ran.
  const bool on_gpu = grader::resolve_target(options.device).on_gpu();
  // What an item's result file holds: its report with the student, or that it was not handed in.
  auto result_text = [&](const BatchItem& item) {
    if (!item.item.submission.empty() && item.item.invalid.empty()) {
      return grader::item_result(item.item, item_report(item));
    }
    const auto& exercise =
        *std::find_if(exercises.begin(), exercises.end(), [&](const auto& e) { return e.id == item.item.exercise; });
    return grader::missing_result(item.item, exercise, on_gpu);
  };
  // Made once: a result file and a class's JSON array say the same.
  std::vector<std::string> texts;
  if (!results.empty() || (class_mode && format == "json")) {
    for (const auto& item : items) texts.push_back(result_text(item));
  }
  if (!results.empty()) {
    // Each item's file, then the manifest: a shard without its manifest did not finish.
    std::vector<std::string> verdicts;
    std::vector<grader::ClassItem> graded;
    for (size_t i = 0; i < items.size(); ++i) {
      const auto& item = items[i];
      auto file = grader::result_file(results, item.item);
      fs::create_directories(file.parent_path());
      grader::write_report_file(file, texts[i]);
      verdicts.push_back(!item.item.invalid.empty()  ? "invalid_submission"
                         : item.item.submission.empty() ? "no_submission"
                         : item.report                  ? grader::verdict_name(item.report->verdict)
                                                        : error_verdict(item.exit_code));
      graded.push_back(item.item);
    }
    auto manifest = grader::manifest_file(results, shard);
    std::map<std::string, double> max_scores;
    for (const auto& exercise : exercises) max_scores[exercise.id] = exercise.max_score(on_gpu);
    grader::write_report_file(manifest, grader::shard_manifest(shard, all, graded, verdicts, max_scores));
  }
  int exit_code = 0;
  if (format == "json") {
    std::cout << "[\n";
    for (size_t i = 0; i < items.size(); ++i) {
      // A class's reports say whose they are.
      std::cout << (class_mode ? texts[i] : item_report(items[i]));
      if (i + 1 < items.size()) std::cout << ",\n";
    }
    std::cout << "]\n";
  } else {
    std::cout << batch_table(items);
  }
  for (const auto& item : items) exit_code = grader::worse_exit(exit_code, item.exit_code);
  // A class (or a batch into --results) succeeds when every student was
  // graded, whatever their verdicts: what is left is a fault a re-run can fix
  // (the grader's: 3), or a usage error of the command (2). A Kubernetes Job
  // or CI step then fails only for those.
  if ((class_mode || !results.empty()) && exit_code != grader::kExitGraderFault && exit_code != grader::kExitUsage) {
    exit_code = grader::kExitPassed;
  }
  return exit_code;
}

}  // namespace

static int run(int argc, char** argv) {
  std::signal(SIGPIPE, SIG_IGN);  // a child that closes its pipe early must not kill the grader
  prctl(PR_SET_DUMPABLE, 0);      // learner code must not read or trace the grader's memory
  grader::become_subreaper();     // what a child leaves behind is reaped here, not left as a zombie
  CLI::App app{
      "Grades a LibTorch implementation of a transformer building block.\n"
      "  grade EXERCISE                  grade the learner file in exercises/EXERCISE/\n"
      "  grade EXERCISE --submission F   grade any file\n"
      "  grade EXERCISE --submission DIR --jobs N\n"
      "                                  grade many files in parallel: one table (or JSON array)\n"
      "  grade EXERCISE --seeds 1,2,3    grade on several seeds: does a verdict depend on the inputs drawn?\n"
      "  grade class DIR --results OUT [--shard i/n|auto]\n"
      "                                  grade a class folder (one folder per student) into result files\n"
      "  grade merge OUT... --gradebook DIR\n"
      "                                  merge the results of every shard into gradebook.csv + one JSON per student\n"
      "  grade list                      the exercises in learning order, with your progress\n"
      "  grade show EXERCISE [--checks]  the statement: the task and the interface (--checks: what is checked)\n"
      "  grade hint EXERCISE             a hint, more detailed each time; first on what your last grade missed\n"
      "  grade solution EXERCISE         the commented model solution, once you have passed (or --reveal)\n"
      "  grade reset EXERCISE [--blank]  your file back to the starter (--blank: without the steps), after\n"
      "                                  saving it to a named backup\n"
      "  grade watch EXERCISE            grade again each time you save the file (Ctrl-C stops; --manual: Enter)\n"
      "  grade interview [EXERCISE]      a timed mock interview: the task, a grade on submit, follow-up questions\n"
      "                                  on what the grade found (--minutes N, --answers FILE); --report: readiness\n"
      "                                  From a fresh copy of the starter; --resume: your own file as it is\n"
      "  grade sandbox                   say what isolates learner code here (exit 0: complete)\n"
      "  ./grade package gradescope|exercism|prairielearn EXERCISE... --to DIR\n"
      "                                  what a grading platform runs: its entry point and the grader's sources"};
  app.name("grade");
  grader::GradeOptions options;
  std::vector<std::string> submissions;
  std::string format = "text", color = "auto", sandbox_mode = "auto";
  int jobs = 1;
  uint64_t seed = 0;
  std::vector<uint64_t> seeds;
  std::string root = ".", build = "build";
  app.add_option("EXERCISE", options.exercise,
                 "exercise id (see: grade list), or 'list', 'watch', 'hint', 'solution', 'reset', 'interview', "
                 "'sandbox', 'class' or 'merge'")
      ->required();
  std::vector<std::string> paths;
  app.add_option("paths", paths,
                 "class: the class folder; merge: the results folder(s); watch, hint, solution, reset, interview: the "
                 "exercise");
  std::string results, shard_text, gradebook;
  std::vector<std::string> class_exercises;
  app.add_option("--results", results,
                 "write one result file per submission under this folder (<student>/<exercise>.json) and a manifest "
                 "of the shard");
  app.add_option("--shard", shard_text,
                 "i/n: grade only shard i of n of the batch or class (1 <= i <= n); auto: take i and n from the "
                 "Slurm array, Kubernetes Indexed Job or GitLab parallel job running this");
  app.add_option("--exercise", class_exercises, "class: grade only this exercise (repeat it for several)");
  app.add_option("--gradebook", gradebook, "merge: the folder the gradebook goes to");
  bool reveal = false, manual = false, show_checks = false;
  std::string focus;
  app.add_option("--focus", focus, "hint: a hint on this focus point (ids: the exercise's exercise.yaml)");
  app.add_flag("--manual", manual, "watch: grade again when you press Enter, not when the file is saved");
  app.add_flag("--reveal", reveal, "solution: show the model solution before you have passed");
  bool blank = false;
  app.add_flag("--blank", blank, "reset: the blank starter (the interface without the steps), to practise from");
  app.add_flag("--checks", show_checks, "show: also what the grader checks and the follow-up questions");
  grader::InterviewOptions interviewing;
  std::string answers;
  bool readiness = false;
  app.add_flag("--resume", interviewing.resume,
               "interview: work on your own file as it is, not on a fresh copy of the starter");
  app.add_option("--minutes", interviewing.minutes, "interview: the time allowed for the code (default 45)")
      ->check(CLI::Range(0.01, 600.0));
  app.add_option("--answers", answers,
                 "interview: read your input from this file (first 'submit' or 'wait', then one answer per line)");
  app.add_flag("--report", readiness, "interview: your readiness per focus point across interviews");
  app.add_option("--submission", submissions,
                 "a learner file to grade (default: the one in exercises/); repeat it, or give a folder, for a batch");
  app.add_option("--jobs", jobs, "grade a batch with this many grades in parallel")->check(CLI::Range(1, 64));
  auto* format_option = app.add_option("--format", format,
                 "report format on standard output: text, json, html (one self-contained page with heatmaps of your "
                 "attention weights beside the reference's), or a grading platform's: exercism, gradescope, "
                 "prairielearn, junit, classroom (GitHub Classroom's autograding result)")
      ->check(CLI::IsMember(grader::report_formats()));
  std::vector<std::string> outputs;
  app.add_option("--output", outputs,
                 "FORMAT=FILE: also write the report in FORMAT to FILE (repeat it for several formats); a bare FILE "
                 "takes --format's format (standard output then gets the text report) or its extension's (.html, "
                 ".json, .xml: junit, .txt); in a batch, FORMAT=FOLDER: one file per submission, named after it");
  auto* seed_option = app.add_option("--seed", seed, "replay the random inputs of an earlier grade");
  app.add_option("--seeds", seeds,
                 "S1,S2,...: grade each submission on each of these seeds, one report each (to see whether a "
                 "verdict depends on the inputs drawn); the seeds of one submission share one runner")
      ->delimiter(',')
      ->excludes(seed_option);
  app.add_option("--color", color, "colour the text report (auto: on a terminal, unless NO_COLOR is set)")
      ->check(CLI::IsMember({"auto", "always", "never"}));
  app.add_option("--within", options.within,
                 "refuse a submission whose real path (links resolved) is not inside this folder (what a grading "
                 "platform's entry point gives: a link in the hand-in must not lead to the grader's files)");
  app.add_option("--visibility", options.visibility,
                 "gradescope: when the student sees the tests and the score (visible, hidden, after_due_date, "
                 "after_published)")
      ->check(CLI::IsMember({"visible", "hidden", "after_due_date", "after_published"}));
  app.add_option("--root", root, "the project folder (holds exercises/)");
  app.add_option("--build-dir", build, "the build folder (holds toolchain.txt)");
  double time_limit = 0;
  auto* time_option = app.add_option("--time-limit", time_limit, "seconds the checks may run (default: the exercise's)")
                          ->check(CLI::Range(1.0, 3600.0));
  double case_limit = 0;
  auto* case_option = app.add_option("--case-time-limit", case_limit,
                                     "seconds any one case may take at least (default 2; 10 on a GPU); "
                                     "a case may take 50 times the reference's time where that is longer")
                          ->check(CLI::Range(0.1, 3600.0));
  double memory_limit = 0, output_limit = 0;
  auto* memory_option = app.add_option("--memory-limit", memory_limit, "MB of memory the checks may use")
                            ->check(CLI::Range(64.0, 1048576.0));
  auto* output_option = app.add_option("--output-limit", output_limit, "KB the checks may print, per stream")
                            ->check(CLI::Range(1.0, 1048576.0));
  app.add_option("--sandbox", sandbox_mode,
                 "auto: isolate where the machine allows, else limits only with a notice; strict: refuse to grade "
                 "without full isolation (for CI); off: limits only")
      ->check(CLI::IsMember({"auto", "strict", "off"}));
  app.add_option("--device", options.device,
                 "where the learner's code runs: cuda (a GPU; refused without one), cpu, or auto (default: cuda "
                 "where this LibTorch sees a CUDA device)")
      ->check(CLI::IsMember({"auto", "cpu", "cuda"}));
  bool no_speed = false;
  app.add_flag("--no-speed", no_speed,
               "on a GPU, skip timing a passed submission against the unfused and fused attention (informational)");
  app.add_flag("--keep-scratch", options.keep_scratch, "keep the scratch folder of this grade for inspection");
  bool no_cache = false;
  app.add_flag("--no-cache", no_cache, "compile even an unchanged submission again");

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& error) {
    int code = app.exit(error);
    if (code == 0) return 0;
    // A CI job that asked for JSON gets JSON, whichever option was wrong.
    for (int i = 1; i < argc; ++i) {
      std::string arg = argv[i];
      if (arg == "--format=json" || (arg == "--format" && i + 1 < argc && std::string(argv[i + 1]) == "json")) {
        std::cout << grader::render_json_error(options.exercise, "usage_error", error.what());
        break;
      }
    }
    return grader::kExitUsage;
  }

  std::function<void(const std::string&, const std::string&)> report_error;
  try {
    options.project_root = std::filesystem::absolute(root);
    options.build_dir = std::filesystem::absolute(build);
    options.use_cache = !no_cache;
    options.speed = !no_speed;
    if (options.exercise == "list") return grader::list(options.project_root);
    if (options.exercise == "solution") return grader::solution(options.project_root, paths, reveal);
    if (options.exercise == "hint") return grader::hint(options.project_root, paths, focus);
    if (options.exercise == "show") return grader::show(options.project_root, paths, show_checks);
    if (options.exercise == "reset") return grader::reset(options.project_root, paths, blank);
    if (options.exercise == "merge") return merge(paths, gradebook);
    if (options.exercise == "interview" && readiness) {
      return grader::interview_report(options.project_root, std::cout, format);
    }
    const auto files_out = parse_outputs(outputs, *format_option ? format : "", format);
    // Whatever happens from here, the files asked for are written (a CI job
    // reads its JUnit file even when the grader fails).
    // By value: the handlers that call it run after this block's locals are gone.
    report_error = [files_out, exercise = options.exercise](const std::string& verdict, const std::string& message) {
      for (const auto& [fmt_name, path] : files_out) {
        grader::write_report_file(path, grader::render_error(exercise, verdict, message, fmt_name));
      }
    };
    if (*seed_option) options.seed = seed;
    if (*time_option) options.run_seconds = time_limit;
    if (*case_option) options.case_seconds = case_limit;
    if (*memory_option) options.memory_mb = memory_limit;
    if (*output_option) options.output_kb = output_limit;

    auto toolchain = grader::load_toolchain(options.build_dir / "toolchain.txt");
    options.sandbox = grader::detect_sandbox(grader::parse_sandbox_mode(sandbox_mode), toolchain.seccomp);
    if (options.exercise == "sandbox") {
      std::cout << options.sandbox.describe() << "\n";
      return options.sandbox.isolating() ? 0 : 1;
    }
    if (!options.sandbox.isolating()) {
      if (options.sandbox.mode == grader::SandboxMode::strict) {
        throw grader::GraderFault("--sandbox strict: cannot isolate learner code here: " + options.sandbox.describe() +
                                  " (docs/sandbox.md)");
      }
      std::cerr << "grade: notice: " << options.sandbox.describe() << "\n";
    }

    if (options.exercise == "watch") {
      if (paths.size() != 1) throw grader::UsageError("watch: name one exercise (see: grade list)");
      options.exercise = paths.front();
      auto exercise =
          grader::load_exercise(grader::find_exercise_dir(options.project_root / "exercises", options.exercise));
      if (submissions.size() > 1) throw grader::UsageError("watch: one --submission at most");
      grader::WatchOptions watching;
      watching.file = submissions.empty() ? exercise.learner_file() : fs::absolute(submissions.front());
      if (!submissions.empty()) options.submission = watching.file;
      watching.manual = manual;
      watching.color = use_color(color);
      if (submissions.empty()) {
        watching.on_grade = [progress = grader::progress_file(options.project_root)](
                                const grader::GradeReport& report) { record_progress(progress, report); };
      }
      return grader::watch(options, watching);
    }
    if (options.exercise == "interview") {
      if (paths.size() > 1) throw grader::UsageError("interview: name one exercise at most (see: grade list)");
      if (submissions.size() > 1) throw grader::UsageError("interview: one --submission at most");
      options.exercise = paths.empty() ? "" : paths.front();
      if (!submissions.empty()) options.submission = fs::absolute(submissions.front());
      if (!answers.empty()) interviewing.answers = fs::absolute(answers);
      interviewing.color = use_color(color);
      interviewing.record_grade = submissions.empty() && interviewing.resume;
      return grader::interview(options, interviewing, std::cout);
    }
    grader::stop_cleanly_on_signals();  // Ctrl-C from here: said, and nothing left behind (stop.h)
    const bool class_mode = options.exercise == "class";
    if (!class_mode && !paths.empty()) {
      throw grader::UsageError("unexpected argument '" + paths.front() +
                               "' (folders of submissions go after --submission)");
    }
    auto files = expand_submissions(submissions);
    bool batch =
        class_mode || files.size() > 1 || !results.empty() || !shard_text.empty() || !seeds.empty() ||
        std::any_of(submissions.begin(), submissions.end(), [](const std::string& s) { return fs::is_directory(s); });
    if (batch) {
      if (format != "text" && format != "json") {
        throw grader::UsageError(
            "a batch prints one table (text) or one JSON array (json); the other formats go to files, one per "
            "submission (--output FORMAT=FOLDER; a class's go to --results)");
      }
      report_error = nullptr;  // its --output values are folders
      return grade_many(
          {class_mode, paths, files, submissions, results, shard_text, class_exercises, jobs, format, files_out, seeds},
          options);
    }
    if (!files.empty()) options.submission = files.front();
    options.figures = grader::draws_figures(format) ||
                      std::any_of(files_out.begin(), files_out.end(),
                                  [](const auto& out) { return grader::draws_figures(out.first); });
    auto report = grader::grade(options);
    if (submissions.empty()) record_progress(grader::progress_file(options.project_root), report);
    std::cout << grader::render(report, format, use_color(color) && format == "text");
    for (const auto& [fmt_name, path] : files_out) grader::write_report_file(path, grader::render(report, fmt_name));
    return grader::exit_code_for(report.verdict);
  } catch (const grader::Error& error) {
    std::cerr << "grade: " << error.what() << "\n";
    const auto verdict = error_verdict(error.exit_code());
    if (grader::errors_on_stdout(format))
      std::cout << grader::render_error(options.exercise, verdict, error.what(), format);
    try_report_error(report_error, verdict, error.what());
    return error.exit_code();
  } catch (const std::exception& error) {
    std::cerr << "grade: internal error: " << error.what() << "\n";
    const std::string message = std::string("internal error: ") + error.what();
    if (grader::errors_on_stdout(format))
      std::cout << grader::render_error(options.exercise, "grader_error", message, format);
    try_report_error(report_error, "grader_error", message);
    return grader::kExitGraderFault;
  }
}

int main(int argc, char** argv) {
  const int code = run(argc, argv);
  grader::close_zygotes();  // each ends at once; their cgroups go with them
  grader::wait_if_stopping();  // Ctrl-C came: the stop ends the process with its own status (stop.h)
  // Everything of ours is written and closed by now. A normal exit would run
  // LibTorch's static destructors, which unregister every operator: about
  // 0.3 s of a grade's wait, for nothing.
  std::cout.flush();
  std::cerr.flush();
  std::fflush(nullptr);
  std::_Exit(code);
}
