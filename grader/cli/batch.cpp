#include "cli/batch.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <atomic>
#include <iostream>
#include <map>
#include <optional>
#include <thread>

#include "teacher/classroom.h"
#include "base/errors.h"
#include "exercise/exercise.h"
#include "report/formats.h"
#include "report/report.h"

namespace grader::cli {

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

namespace {

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

}  // namespace

std::string error_verdict(int exit_code) {
  return exit_code == grader::kExitGraderFault ? "grader_error" : "usage_error";
}

namespace {

// One item of a batch in `format` (its report, or the error that kept it from one).
std::string item_report(const BatchItem& item, const std::string& format = "json") {
  if (item.report) return grader::render(*item.report, format);
  if (!item.item.invalid.empty()) {
    return grader::render_error(item.item.exercise, "invalid_submission", item.item.invalid, format);
  }
  return grader::render_error(item.item.exercise, error_verdict(item.exit_code),
                              item.item.submission.string() + ": " + item.error, format);
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

}  // namespace

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


namespace {

// A batch's report file of `submission` in `format`, inside `dir`
// (<stem>.seed-<N>.<ext> for the grade on one of --seeds).
fs::path batch_output_file(const fs::path& dir, const fs::path& submission, const std::string& format,
                           std::optional<uint64_t> seed = std::nullopt) {
  auto stem = submission.stem().string() + (seed ? ".seed-" + std::to_string(*seed) : std::string());
  return dir / (stem + find_report_format(format)->extension);
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

}  // namespace

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

}  // namespace grader::cli
