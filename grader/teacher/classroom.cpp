#include "teacher/classroom.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "exercise/discovery.h"
#include "base/errors.h"
#include "report/formats.h"
#include "report/report.h"

namespace grader {
namespace fs = std::filesystem;
using Json = nlohmann::ordered_json;

namespace {

constexpr int kManifestVersion = 1;
const char* const kShardFolder = ".shards";  // hidden: never taken for a student

// A whole non-negative number, nothing around it.
std::optional<size_t> parse_count(const std::string& text) {
  if (text.empty() || text.size() > 9 || !std::all_of(text.begin(), text.end(), ::isdigit)) return std::nullopt;
  return static_cast<size_t>(std::stoul(text));
}

size_t env_number(const EnvLookup& env, const std::string& name, std::optional<size_t> fallback = std::nullopt) {
  auto value = env(name);
  if (!value) {
    if (fallback) return *fallback;
    throw UsageError("--shard auto: " + name + " is not set");
  }
  auto number = parse_count(*value);
  if (!number) throw UsageError("--shard auto: " + name + "='" + *value + "' is not a whole number");
  return *number;
}

Shard checked(Shard shard) {
  if (shard.count == 0) throw UsageError(shard.source + ": the number of shards must be at least 1");
  if (shard.index >= shard.count) {
    throw UsageError(fmt::format("{}: shard {} of {} does not exist (shards are 1 to {})", shard.source,
                                 shard.index + 1, shard.count, shard.count));
  }
  return shard;
}

Shard shard_from_engine(const EnvLookup& env) {
  if (env("SLURM_ARRAY_TASK_ID")) {
    // --array=0-7, 1-8 or 0-14:2 all give shards 1..count.
    const size_t id = env_number(env, "SLURM_ARRAY_TASK_ID");
    const size_t min = env_number(env, "SLURM_ARRAY_TASK_MIN", 0);
    const size_t step = env_number(env, "SLURM_ARRAY_TASK_STEP", 1);
    const size_t count = env_number(env, "SLURM_ARRAY_TASK_COUNT");
    if (step == 0 || id < min || (id - min) % step != 0) {
      throw UsageError("--shard auto: the Slurm array is not a range (give --array=0-N or 1-N)");
    }
    return checked({(id - min) / step, count, "SLURM_ARRAY_TASK_ID"});
  }
  if (env("JOB_COMPLETION_INDEX")) {
    if (!env("GRADE_SHARD_COUNT")) {
      throw UsageError(
          "--shard auto: a Kubernetes Indexed Job gives JOB_COMPLETION_INDEX but not the number of shards: set "
          "GRADE_SHARD_COUNT to the Job's completions");
    }
    return checked(
        {env_number(env, "JOB_COMPLETION_INDEX"), env_number(env, "GRADE_SHARD_COUNT"), "JOB_COMPLETION_INDEX"});
  }
  if (env("CI_NODE_INDEX")) {
    const size_t index = env_number(env, "CI_NODE_INDEX");  // 1-based
    if (index == 0) throw UsageError("--shard auto: CI_NODE_INDEX is 1-based, got 0");
    return checked({index - 1, env_number(env, "CI_NODE_TOTAL"), "CI_NODE_INDEX"});
  }
  throw UsageError(
      "--shard auto: no engine's index variables are set (SLURM_ARRAY_TASK_ID, JOB_COMPLETION_INDEX with "
      "GRADE_SHARD_COUNT, or CI_NODE_INDEX with CI_NODE_TOTAL); give --shard i/n instead");
}

Json read_json(const fs::path& file) {
  std::ifstream in(file, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  if (!in) throw UsageError("cannot read " + file.string());
  return Json::parse(text.str());
}

// RFC 4180 cell, the text byte for byte.
std::string csv_exact(const std::string& text) {
  if (text.find_first_of(",\"\r\n") == std::string::npos) return text;
  std::string quoted = "\"";
  for (char c : text) quoted += c == '"' ? std::string("\"\"") : std::string(1, c);
  return quoted + "\"";
}

// RFC 4180 cell of text the grader wrote (summaries, warnings naming files):
// one a spreadsheet would run as a formula is prefixed with ' (OWASP's advice).
std::string csv_cell(std::string text) {
  if (spreadsheet_formula(text)) text.insert(0, "'");
  return csv_exact(text);
}

std::string number(double value) { return fmt::format("{:g}", value); }

// A lost or failed grade has no score, but the maximum is the exercise's.
double maximum_of(const Gradebook& book, const std::string& exercise) {
  auto found = book.max_scores.find(exercise);
  return found == book.max_scores.end() ? 0 : found->second;
}

bool has_score(const GradebookEntry& entry) {
  return entry.verdict != "grader_error" && entry.verdict != "usage_error" && entry.verdict != "not_graded";
}

// A grade that could not be assessed where it ran (a CUDA exercise on a
// machine without a GPU) is outside the student's total: no score, no maximum.
bool outside_total(const GradebookEntry& entry) { return entry.verdict == "not_assessed"; }

// The score a cell adds to its student's total, if it has one.
bool scored(const GradebookEntry& entry) { return !outside_total(entry) && has_score(entry); }

// What an exercise adds to its student's maximum (`entry` null: not graded).
double cell_maximum(const Gradebook& book, const std::string& exercise, const GradebookEntry* entry) {
  return entry && outside_total(*entry) ? 0 : maximum_of(book, exercise);
}

// A student's total over the gradebook's exercises: complete only when every
// exercise in it has a score (a total over an incomplete row would understate
// the student, so it is left empty).
struct RowTotal {
  double score = 0, max_score = 0;
  bool complete = true;
};

RowTotal total_of(const Gradebook& book, const std::map<std::string, GradebookEntry>& row) {
  RowTotal total;
  for (const auto& exercise : book.exercises) {
    auto cell = row.find(exercise);
    const GradebookEntry* entry = cell == row.end() ? nullptr : &cell->second;
    total.max_score += cell_maximum(book, exercise, entry);
    if (entry && outside_total(*entry)) continue;
    if (entry && has_score(*entry)) {
      total.score += entry->score;
    } else {
      total.complete = false;
    }
  }
  return total;
}

}  // namespace

bool spreadsheet_formula(const std::string& text) {
  return !text.empty() && std::string("=+-@\t\r").find(text.front()) != std::string::npos;
}

std::string Shard::describe() const { return fmt::format("{}/{}", index + 1, count); }

EnvLookup process_environment() {
  return [](const std::string& name) -> std::optional<std::string> {
    const char* value = std::getenv(name.c_str());
    if (!value || !*value) return std::nullopt;
    return std::string(value);
  };
}

Shard parse_shard(const std::string& text, const EnvLookup& env) {
  if (text == "auto") return shard_from_engine(env);
  auto slash = text.find('/');
  auto index = parse_count(text.substr(0, slash));
  auto count = slash == std::string::npos ? std::nullopt : parse_count(text.substr(slash + 1));
  if (!index || !count) throw UsageError("--shard '" + text + "': expected i/n (for example 2/4) or auto");
  if (*index == 0) throw UsageError("--shard '" + text + "': shards are numbered from 1");
  return checked({*index - 1, *count, "--shard " + text});
}

std::vector<ClassItem> class_items(const fs::path& class_dir, const std::vector<Exercise>& exercises) {
  std::error_code error;
  if (!fs::is_directory(fs::symlink_status(class_dir, error))) {
    throw UsageError("the class folder " + class_dir.string() + " is not a folder (expected one folder per student)");
  }
  std::vector<std::string> students;
  std::map<std::string, std::string> refused;  // student -> why none of the folder is graded
  for (const auto& entry : fs::directory_iterator(class_dir)) {
    const auto name = entry.path().filename().string();
    if (name.empty() || name.front() == '.') continue;
    // A name that is not text (bytes that are not UTF-8, control characters)
    // cannot be a gradebook's key: its escaped form is, and the row says why.
    const auto student = printable(name);
    if (entry.is_symlink(error)) {
      // Never followed: a link (to a folder, a file, nowhere, itself) is that student's row, saying why.
      refused[student] = "the student's folder is a symbolic link (to " +
                         printable(fs::read_symlink(entry.path(), error).string()) +
                         "): a student's answers are read from a folder of the class itself (copy it in instead)";
    } else if (!fs::is_directory(entry.symlink_status(error))) {
      continue;  // a file beside the students: nobody's
    } else if (student != name) {
      refused[student] = "the folder's name is not plain text (" + student +
                         "): rename it with letters, digits and punctuation";
    }
    students.push_back(student);
  }
  if (students.empty()) throw UsageError("no student folders in " + class_dir.string());
  std::sort(students.begin(), students.end());
  std::vector<const Exercise*> sorted;
  for (const auto& exercise : exercises) sorted.push_back(&exercise);
  std::sort(sorted.begin(), sorted.end(), [](auto* a, auto* b) { return a->id < b->id; });
  std::vector<ClassItem> items;
  for (const auto& student : students) {
    for (const auto* exercise : sorted) {
      ClassItem item{student, exercise->id, {}, {}, {}};
      if (refused.count(student)) {
        item.invalid = refused.at(student);
      } else {
        auto found = find_answer(class_dir / student, *exercise);
        item.submission = found.answer;
        item.invalid = found.invalid;
        item.warnings = found.warnings;
      }
      items.push_back(std::move(item));
    }
  }
  return items;
}

std::vector<ClassItem> batch_items(const std::vector<fs::path>& files, const std::string& exercise) {
  std::vector<ClassItem> items;
  std::map<std::string, fs::path> seen;
  for (const auto& file : files) {
    auto student = file.stem().string();
    auto [at, fresh] = seen.emplace(student, file);
    if (!fresh) {
      throw UsageError("--results: " + at->second.string() + " and " + file.string() + " would both be student '" +
                       student + "' (results are named by the file's stem)");
    }
    items.push_back({student, exercise, file, {}, {}});
  }
  std::sort(items.begin(), items.end(), [](const auto& a, const auto& b) { return a.student < b.student; });
  return items;
}

fs::path result_file(const fs::path& results, const ClassItem& item) {
  return results / item.student / (item.exercise + ".json");
}

std::string item_result(const ClassItem& item, const std::string& report_json) {
  auto json = Json::parse(report_json);
  json["student"] = item.student;
  if (!item.warnings.empty()) json["warnings"] = item.warnings;
  return json_text(json);
}

std::string missing_result(const ClassItem& item, const Exercise& exercise, bool on_gpu) {
  Json json;
  json["exercise"] = item.exercise;
  if (!item.invalid.empty()) {
    json["verdict"] = "invalid_submission";
    json["summary"] = "not graded: " + item.invalid;
  } else {
    json["verdict"] = "no_submission";
    json["summary"] = fmt::format("no {} (nor exercises/{}/{}) in the student's folder",
                                  exercise.learner_files.front(), exercise.id, exercise.learner_files.front());
  }
  if (!item.warnings.empty()) json["warnings"] = item.warnings;
  json["checks"] = Json::array();
  json["focus_points"] = Json::array();
  json["score"] = 0;
  json["max_score"] = exercise.max_score(on_gpu);
  json["student"] = item.student;
  return json_text(json);
}

fs::path manifest_file(const fs::path& results, const Shard& shard) {
  return results / kShardFolder / fmt::format("shard-{}-of-{}.json", shard.index + 1, shard.count);
}

std::string shard_manifest(const Shard& shard, const std::vector<ClassItem>& all, const std::vector<ClassItem>& graded,
                           const std::vector<std::string>& verdicts, const std::map<std::string, double>& max_scores) {
  std::set<std::string> students, exercises;
  for (const auto& item : all) {
    students.insert(item.student);
    exercises.insert(item.exercise);
  }
  Json json;
  json["manifest_version"] = kManifestVersion;
  json["shard"] = {{"index", shard.index + 1}, {"count", shard.count}, {"from", shard.source}};
  json["students"] = students;
  json["exercises"] = exercises;
  json["max_scores"] = Json::object();
  for (const auto& exercise : exercises) {
    auto found = max_scores.find(exercise);
    if (found != max_scores.end()) json["max_scores"][exercise] = found->second;
  }
  json["items"] = Json::array();
  for (size_t i = 0; i < graded.size(); ++i) {
    json["items"].push_back(
        {{"student", graded[i].student}, {"exercise", graded[i].exercise}, {"verdict", verdicts.at(i)}});
  }
  return json_text(json);
}

namespace {
// The results folders given, each once whatever path names it.
std::set<fs::path> results_folders(const std::vector<fs::path>& results_dirs) {
  std::set<fs::path> dirs;
  for (const auto& dir : results_dirs) {
    std::error_code error;
    auto canonical = fs::canonical(dir, error);
    if (error || !fs::is_directory(canonical)) throw UsageError("no results folder " + dir.string());
    dirs.insert(canonical);
  }
  return dirs;
}
}  // namespace

Gradebook merge_results(const std::vector<fs::path>& results_dirs) {
  Gradebook book;
  const auto dirs = results_folders(results_dirs);
  std::set<std::string> exercises;
  // Manifests: which shards finished, and the class they split.
  std::map<size_t, std::set<size_t>> finished;                    // count -> indexes (1-based)
  std::set<std::pair<std::string, std::string>> graded_by_shard;  // items a finished shard says it graded
  std::optional<std::pair<std::set<std::string>, std::set<std::string>>> split;  // students, exercises
  for (const auto& dir : dirs) {
    if (!fs::is_directory(dir / kShardFolder)) continue;
    for (const auto& entry : fs::directory_iterator(dir / kShardFolder)) {
      if (entry.path().extension() != ".json" || !entry.is_regular_file()) continue;
      try {
        auto json = read_json(entry.path());
        const size_t index = json.at("shard").at("index"), count = json.at("shard").at("count");
        auto of_this = std::make_pair(json.at("students").get<std::set<std::string>>(),
                                      json.at("exercises").get<std::set<std::string>>());
        if (!split) {
          split = of_this;
        } else if (*split != of_this) {
          book.problems.push_back(entry.path().string() +
                                  " split another class (students or exercises differ): the class folder changed "
                                  "between shards; grade it again into a fresh results folder");
          continue;
        }
        finished[count].insert(index);
        const auto max_scores = json.value("max_scores", Json::object());
        for (const auto& [exercise, max_score] : max_scores.items())
          book.max_scores[exercise] = max_score.get<double>();
        for (const auto& item : json.at("items")) {
          graded_by_shard.insert(
              std::make_pair(item.at("student").get<std::string>(), item.at("exercise").get<std::string>()));
        }
      } catch (const nlohmann::json::exception& error) {
        book.problems.push_back(entry.path().string() + " is not a shard manifest: " + error.what());
      }
    }
  }
  // Results: <student>/<exercise>.json.
  std::map<std::pair<std::string, std::string>, fs::path> found;
  for (const auto& dir : dirs) {
    for (const auto& student_entry : fs::directory_iterator(dir)) {
      auto student = student_entry.path().filename().string();
      if (student.front() == '.' || !student_entry.is_directory() || student_entry.is_symlink()) continue;
      for (const auto& entry : fs::directory_iterator(student_entry.path())) {
        if (entry.path().extension() != ".json" || !entry.is_regular_file() || entry.is_symlink()) continue;
        auto exercise = entry.path().stem().string();
        auto [at, fresh] = found.emplace(std::make_pair(student, exercise), entry.path());
        if (!fresh) {
          book.problems.push_back(fmt::format("{} {} was graded twice ({} and {}): merge one copy of each shard",
                                              student, exercise, at->second.string(), entry.path().string()));
          continue;
        }
        GradebookEntry cell;
        cell.result = entry.path();
        try {
          auto json = read_json(entry.path());
          cell.verdict = json.at("verdict");
          cell.summary = json.value("summary", "");
          cell.score = json.value("score", 0.0);
          cell.max_score = json.value("max_score", 0.0);
          cell.seed = json.value("seed", uint64_t{0});
          cell.warnings = json.value("warnings", std::vector<std::string>{});
          const auto focus_points = json.value("focus_points", Json::array());
          for (const auto& focus : focus_points) {
            if (focus.value("status", "") == "missed") cell.missed.push_back(focus.value("id", ""));
          }
        } catch (const std::exception& error) {
          book.problems.push_back(entry.path().string() + " is not a grade result: " + error.what());
          continue;
        }
        if (cell.verdict == "grader_error") {
          book.problems.push_back(
              fmt::format("{} {}: the grader failed ({}): grade it again", student, exercise, cell.summary));
        } else if (cell.verdict == "usage_error") {
          book.problems.push_back(
              fmt::format("{} {}: the submission could not be graded ({})", student, exercise, cell.summary));
        }
        exercises.insert(exercise);
        book.students[student][exercise] = cell;
      }
    }
  }
  if (found.empty() && !split) {
    std::string names;
    for (const auto& dir : dirs) names += (names.empty() ? "" : ", ") + dir.string();
    throw UsageError("no grade results in " + names + " (written by `grade class ... --results DIR`)");
  }
  // Completeness: every shard of one split finished, every item of the class has a result.
  if (finished.empty()) {
    book.problems.push_back("no shard manifest (" + std::string(kShardFolder) +
                            "/): cannot tell whether every shard finished");
  } else if (finished.size() > 1) {
    std::string counts;
    for (const auto& [count, indexes] : finished) counts += (counts.empty() ? "" : ", ") + std::to_string(count);
    book.problems.push_back("results of splits into different numbers of shards (" + counts +
                            ") are mixed: grade into a fresh results folder");
  } else {
    const auto& [count, indexes] = *finished.begin();
    for (size_t i = 1; i <= count; ++i) {
      if (!indexes.count(i)) {
        book.problems.push_back(fmt::format("shard {}/{} has not finished (no manifest): run it again", i, count));
      }
    }
    // The class's items in the order every shard split them.
    size_t position = 0;
    for (const auto& student : split->first) {
      for (const auto& exercise : split->second) {
        const size_t shard = position++ % count + 1;
        exercises.insert(exercise);
        auto key = std::make_pair(student, exercise);
        if (found.count(key)) continue;
        // A lost shard was said above; a finished one that lost a result is said here.
        if (indexes.count(shard)) {
          book.problems.push_back(
              fmt::format("{} {}: shard {}/{} finished but its result is missing: run that "
                          "shard again",
                          student, exercise, shard, count));
        }
        GradebookEntry lost;
        lost.verdict = "not_graded";
        lost.summary = fmt::format("not graded: shard {}/{} left no result", shard, count);
        book.students[student][exercise] = lost;
      }
    }
    for (const auto& [key, file] : found) {
      if (!split->first.count(key.first) || !split->second.count(key.second) ||
          (indexes.size() == count && !graded_by_shard.count(key))) {
        book.problems.push_back(
            fmt::format("{} {}: {} belongs to no shard of this split (left from an earlier "
                        "run?): grade into a fresh results folder",
                        key.first, key.second, file.string()));
      }
    }
  }
  // Each exercise's maximum, also where a result is lost or failed: the
  // manifests' (what a full answer earns where the class was graded), else
  // the largest any result states. Never raised by one student's result (a
  // forbidden CUDA kernel's counts a check more).
  std::map<std::string, double> stated;
  for (const auto& [student, row] : book.students) {
    for (const auto& [exercise, cell] : row) stated[exercise] = std::max(stated[exercise], cell.max_score);
  }
  for (const auto& [exercise, max_score] : stated) book.max_scores.emplace(exercise, max_score);
  book.exercises.assign(exercises.begin(), exercises.end());
  return book;
}

std::string gradebook_csv(const Gradebook& book) {
  std::string out = "student,score,max_score";
  for (const auto& exercise : book.exercises) {
    out += "," + csv_cell(exercise + " score") + "," + csv_cell(exercise + " verdict") + "," +
           csv_cell(exercise + " missed focus points");
  }
  out += ",warnings\r\n";
  for (const auto& [student, row] : book.students) {
    std::string cells, warnings;
    for (const auto& exercise : book.exercises) {
      auto cell = row.find(exercise);
      if (cell == row.end()) {
        cells += ",," + csv_cell("not_graded") + ",";
        continue;
      }
      const auto& entry = cell->second;
      for (const auto& warning : entry.warnings) warnings += (warnings.empty() ? "" : "; ") + exercise + ": " + warning;
      cells += "," + (scored(entry) ? number(entry.score) : "") + "," + csv_cell(entry.verdict) + "," +
               csv_cell(fmt::format("{}", fmt::join(entry.missed, ";")));
    }
    const auto total = total_of(book, row);
    // The student's id byte for byte, the key a roster joins on (merge warns
    // of ids a spreadsheet would read as a formula).
    out += csv_exact(student) + "," + (total.complete ? number(total.score) : "") + "," + number(total.max_score) +
           cells + "," + csv_cell(warnings) + "\r\n";
  }
  return out;
}

std::string student_json(const Gradebook& book, const std::string& student) {
  const auto& row = book.students.at(student);
  Json json;
  json["student"] = student;
  json["exercises"] = Json::object();
  for (const auto& exercise : book.exercises) {
    auto cell = row.find(exercise);
    if (cell == row.end()) {
      json["exercises"][exercise] = {{"verdict", "not_graded"}};
      continue;
    }
    const auto& entry = cell->second;
    Json item = {{"verdict", entry.verdict}};
    if (scored(entry)) item["score"] = entry.score;
    item["max_score"] = cell_maximum(book, exercise, &entry);
    item["missed_focus_points"] = entry.missed;
    item["summary"] = entry.summary;
    if (!entry.warnings.empty()) item["warnings"] = entry.warnings;
    if (entry.seed) item["seed"] = entry.seed;
    if (!entry.result.empty()) item["result"] = entry.result.string();
    json["exercises"][exercise] = item;
  }
  const auto total = total_of(book, row);
  json["score"] = total.complete ? Json(total.score) : Json(nullptr);
  json["max_score"] = total.max_score;
  json["complete"] = total.complete;
  return json_text(json);
}

}  // namespace grader
