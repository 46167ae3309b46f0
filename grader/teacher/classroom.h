// Grading a class (docs/teaching.md): the (student, exercise) items
// of a class folder, the share of them one shard grades, the result file each
// item's grade leaves (a retried shard rewrites it, never adds a second), the
// manifest a finished shard leaves, and the merge of every shard's results
// into a gradebook. The grading itself is grade(), once per item.
#pragma once

#include <cstddef>
#include <filesystem>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "exercise/exercise.h"

namespace grader {

// Shard `index` of `count`, 0 <= index < count; items index, index + count, ...
struct Shard {
  size_t index = 0;
  size_t count = 1;
  std::string source = "--shard";  // where it came from: the option or an engine's variable
  std::string describe() const;    // "2/4": 1-based, as on the command line
};

// Looks up an environment variable (tests give their own).
using EnvLookup = std::function<std::optional<std::string>(const std::string&)>;
EnvLookup process_environment();

// "i/n" with 1 <= i <= n, or "auto": the index variables of the engine that
// started this process: a Slurm job array (SLURM_ARRAY_TASK_ID, _COUNT, _MIN,
// _STEP), a Kubernetes Indexed Job (JOB_COMPLETION_INDEX, with the count in
// GRADE_SHARD_COUNT), GitLab's `parallel:` (CI_NODE_INDEX, CI_NODE_TOTAL).
// Throws UsageError saying what is malformed or missing.
Shard parse_shard(const std::string& text, const EnvLookup& env);

// The items of `shard` in a list every shard sorts the same way.
template <class Item>
std::vector<Item> shard_of(const std::vector<Item>& items, const Shard& shard) {
  std::vector<Item> mine;
  for (size_t i = shard.index; i < items.size(); i += shard.count) mine.push_back(items[i]);
  return mine;
}

struct ClassItem {
  std::string student;               // the student's folder name (or a batch file's stem)
  std::string exercise;              // exercise id
  std::filesystem::path submission;  // empty: the student has no file for this exercise (or an invalid one)
  std::string invalid;               // why the student's input cannot be graded: invalid_submission
  std::vector<std::string> warnings;  // what discovery did that the student should know (discovery.h)
};

// Every student folder of `class_dir` (hidden ones skipped) times every
// exercise, sorted by student then exercise in byte order, so every machine
// agrees. A student's file for an exercise is found by find_answer
// (discovery.h); what keeps it from being graded (a folder that is a link, a
// path leading out of the student's folder, two different answers) is that
// student's item's `invalid`, never an error of the whole class.
std::vector<ClassItem> class_items(const std::filesystem::path& class_dir, const std::vector<Exercise>& exercises);

// A one-exercise batch as class items: each file is a student named by its stem.
// Two files with the same stem are refused (their results would collide).
std::vector<ClassItem> batch_items(const std::vector<std::filesystem::path>& files, const std::string& exercise);

// <results>/<student>/<exercise>.json: one per item, whoever grades it.
std::filesystem::path result_file(const std::filesystem::path& results, const ClassItem& item);

// The grader's JSON report of an item (render_json or render_json_error),
// with the student added: what result_file() holds.
std::string item_result(const ClassItem& item, const std::string& report_json);
// The result of an item without a submission (no_submission), or with one
// that cannot be graded (invalid_submission, with the reason), on a machine
// with a GPU or not (the maximum is what a full answer would earn there).
std::string missing_result(const ClassItem& item, const Exercise& exercise, bool on_gpu);

// What a finished shard leaves in <results>/.shards/: the whole split (every
// student and exercise of the class, so any manifest tells what a complete
// gradebook holds) and the items this shard graded with their verdicts, so a
// merge can tell a lost shard or a lost result from a missing submission.
std::filesystem::path manifest_file(const std::filesystem::path& results, const Shard& shard);
// `max_scores`: each exercise's maximum, so even a column no result reached has one.
std::string shard_manifest(const Shard& shard, const std::vector<ClassItem>& all, const std::vector<ClassItem>& graded,
                           const std::vector<std::string>& verdicts, const std::map<std::string, double>& max_scores);

// One cell of the gradebook.
struct GradebookEntry {
  std::string verdict;  // a grader verdict, "no_submission", "invalid_submission", or "usage_error"
  double score = 0;
  double max_score = 0;
  std::vector<std::string> missed;  // focus points reported missed
  std::string summary;
  uint64_t seed = 0;
  std::filesystem::path result;  // the result file it was read from
  std::vector<std::string> warnings;  // what discovery found (a misnamed file, a second copy)
};

struct Gradebook {
  std::vector<std::string> exercises;                                     // the columns, sorted
  std::map<std::string, std::map<std::string, GradebookEntry>> students;  // student -> exercise -> entry
  std::map<std::string, double> max_scores;  // exercise -> its maximum (manifests, else results)
  // What keeps the gradebook from being complete: a shard without manifest,
  // an item without result, an item graded twice, a grader fault. Each is a
  // sentence a teacher can act on; none is a learner's failure.
  std::vector<std::string> problems;
};

// Reads the result files and manifests under each of `results_dirs` (one
// folder shared by every shard, or one per shard collected from several
// machines). Throws UsageError for a folder that holds no results.
Gradebook merge_results(const std::vector<std::filesystem::path>& results_dirs);

// One row per student: student, score, max_score, then per exercise its
// score, verdict and missed focus points, and the warnings (RFC 4180 quoting).
// The student's id is written byte for byte; any other cell that a
// spreadsheet would run as a formula is prefixed with '.
std::string gradebook_csv(const Gradebook& book);
// Whether a spreadsheet would read a cell starting like `text` as a formula.
bool spreadsheet_formula(const std::string& text);
// One student's grades as JSON: totals and, per exercise, the entry.
std::string student_json(const Gradebook& book, const std::string& student);

}  // namespace grader
