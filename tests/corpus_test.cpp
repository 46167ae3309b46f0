// The grader's proof: every submission in the labelled corpus is graded with
// the real command line, and the verdict, exit status and missed focus points
// must be exactly what its label says.
//
//   tests/submissions/<exercise>/accepted/*.cpp   must pass, every focus point met
//   tests/submissions/<exercise>/wrong/*.cpp      must fail; NAME.expect.yaml lists
//                                                 the focus points that must be missed
//                                                 and, optionally, the diagnosed mistake
//                                                 and words a failed check must say (says)
//   tests/submissions/<exercise>/hostile/*.cpp    NAME.expect.yaml gives the verdict;
//                                                 needs_sandbox: only where the sandbox
//                                                 isolates (skipped, visibly, elsewhere);
//                                                 must_not_create: files that must not
//                                                 exist afterwards; no_process_named: a
//                                                 process name nothing may leave running;
//                                                 report_lacks: strings no report may hold;
//                                                 without_sandbox: same: the same verdict
//                                                 and missed set with --sandbox off
//   solutions/<exercise>/*.cpp                    the model answers must pass
//   exercises/<exercise>/<learner file>           the starter must fail, clearly
//
// A CUDA exercise (learner file *.cu, submissions *.cu) is labelled for a GPU:
// the labels above hold where the report says "gpu_verified". Elsewhere the
// kernel never ran, and the label's `compile_only:` (nvcc found, no GPU) or
// `without_nvcc:` block, if any, gives the verdict and missed focus points;
// without one, the grade must not pass, must miss no focus point, and must
// say for every check why it was skipped (only `compiles` may pass, and only
// as compile-only; without nvcc every check says "nvcc not found").
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <random>
#include <set>
#include <sstream>
#include <thread>

#include "corpus_support.h"
#include "format_checks.h"

namespace {
namespace fs = std::filesystem;
using namespace corpus;

std::vector<Entry> corpus() {
  std::vector<Entry> entries;
  auto add_dir = [&](const std::string& exercise, const std::string& kind, const fs::path& dir) {
    if (!fs::is_directory(dir)) return;
    std::vector<fs::path> files;
    for (const auto& item : fs::directory_iterator(dir)) {
      if (item.path().extension() == ".cpp" || item.path().extension() == ".cu") files.push_back(item.path());
    }
    std::sort(files.begin(), files.end());
    for (const auto& file : files) entries.push_back({exercise, kind, file});
  };
  for (const auto& exercise : exercise_ids()) {
    for (const char* kind : {"accepted", "wrong", "hostile"}) {
      add_dir(exercise, kind, kRoot / "tests" / "submissions" / exercise / kind);
    }
    add_dir(exercise, "solution", kRoot / "solutions" / exercise);
    auto yaml = YAML::LoadFile((kRoot / "exercises" / exercise / "exercise.yaml").string());
    entries.push_back(
        {exercise, "starter", kRoot / "exercises" / exercise / yaml["learner_files"][0].as<std::string>()});
  }
  return entries;
}

class Corpus : public ::testing::TestWithParam<Entry> {};

// Whether the grader was configured with nvcc (toolchain.txt names it).
bool toolchain_has_nvcc() {
  std::ifstream in(kBuild / "toolchain.txt");
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("nvcc ", 0) == 0 && line.size() > 5) return true;
  }
  return false;
}

// A grade of a CUDA exercise where no GPU ran the kernel (see the top).
void expect_without_gpu(const Entry& entry, const YAML::Node& expect, const Graded& graded) {
  const bool nvcc = toolchain_has_nvcc();
  const auto verdict = graded.report.value("verdict", "");
  EXPECT_FALSE(graded.report.value("gpu_verified", false));
  EXPECT_NE(verdict, "passed") << "nothing was GPU-verified, so nothing may pass\n" << describe(graded);
  const auto block = expect[nvcc ? "compile_only" : "without_nvcc"];
  if (block && block["verdict"]) {
    EXPECT_EQ(verdict, block["verdict"].as<std::string>()) << describe(graded);
    EXPECT_EQ(graded.exit_code, 1) << describe(graded);
    EXPECT_EQ(focus_points_with(graded.report, "missed"), labelled_missed(block))
        << "the missed focus points must be exactly the label's\n"
        << describe(graded);
    return;
  }
  // Nothing found wrong, nothing shown: not assessed (exit 4), no score of no maximum.
  EXPECT_EQ(verdict, "not_assessed") << describe(graded);
  EXPECT_EQ(graded.exit_code, 4) << describe(graded);
  EXPECT_EQ(graded.report.value("score", -1.0), 0) << describe(graded);
  EXPECT_EQ(graded.report.value("max_score", -1.0), 0) << describe(graded);
  EXPECT_TRUE(focus_points_with(graded.report, "missed").empty()) << "a kernel that never ran misses no focus point\n"
                                                                  << describe(graded);
  ASSERT_FALSE(graded.report["checks"].empty()) << describe(graded);
  for (const auto& check : graded.report["checks"]) {
    const auto id = check.value("id", ""), status = check.value("status", ""), message = check.value("message", "");
    if (nvcc && id == "compiles") {
      EXPECT_EQ(status, "passed") << entry.file << ": nvcc compiles every corpus file\n" << describe(graded);
      EXPECT_NE(message.find("compile-only"), std::string::npos) << message;
      continue;
    }
    EXPECT_EQ(status, "skipped") << id << " cannot be judged without a GPU\n" << describe(graded);
    EXPECT_FALSE(message.empty()) << id << " must say why it was skipped";
    const std::string reason = nvcc ? "not GPU-verified" : "nvcc not found";
    EXPECT_NE(message.find(reason), std::string::npos) << id << ": " << message;
  }
}

// The label of a wrong or hostile entry (empty for the others).
YAML::Node label_of(const Entry& entry) {
  if (entry.kind != "wrong" && entry.kind != "hostile") return {};
  auto file = entry.file.parent_path() / (entry.file.stem().string() + ".expect.yaml");
  return fs::exists(file) ? YAML::LoadFile(file.string()) : YAML::Node();
}

bool skipped_here(const YAML::Node& expect) {
  return expect["needs_sandbox"] && expect["needs_sandbox"].as<bool>() && !sandbox_isolates();
}

const std::vector<std::string> kPlatforms = {"exercism", "gradescope", "prairielearn", "junit", "html", "classroom"};

// What one grade gave: the report (with the exit status of a single grade)
// and the same grade in every platform's format.
struct Outcome {
  Graded graded;
  std::map<std::string, std::string> rendered;
};

std::string read_file(const fs::path& file) {
  std::ifstream in(file, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// The exit status a single grade ends with, from its verdict (exit_code_for).
int exit_status_of(const std::string& verdict) {
  return verdict == "passed"         ? 0
         : verdict == "not_assessed" ? 4
         : verdict == "usage_error"  ? 2
         : verdict == "grader_error" ? 3
                                     : 1;
}

// docs/reports.md: a batch exits with its worst status: 3, then 2, then 1, then 4
// (not assessed here), then 0.
int worse_status(int a, int b) {
  auto rank = [](int code) { return code == 4 ? 1 : code == 0 ? 0 : code + 1; };
  return rank(a) >= rank(b) ? a : b;
}

// How a batch names a submission's report in each platform's format (after
// the file's stem; see grade --help, --output).
const std::map<std::string, std::string> kBatchSuffix = {{"exercism", ".exercism.json"},
                                                         {"gradescope", ".gradescope.json"},
                                                         {"prairielearn", ".prairielearn.json"},
                                                         {"junit", ".xml"},
                                                         {"html", ".html"},
                                                         {"classroom", ".classroom.json"}};

// One grade with the real single-grade command line (a model solution, a
// starter, a folder's only file), its exit status read from the process.
Outcome grade_alone(const Entry& entry, std::vector<std::string> extra = {}) {
  const auto dir = kBuild / "corpus_formats" / entry.exercise / entry.kind / entry.file.stem();
  fs::create_directories(dir);
  for (const auto& platform : kPlatforms) extra.push_back("--output=" + platform + "=" + (dir / platform).string());
  Outcome outcome{run_grade(entry, extra), {}};
  for (const auto& platform : kPlatforms) outcome.rendered[platform] = read_file(dir / platform);
  fs::remove_all(dir);
  return outcome;
}

// The accepted, wrong and hostile files of one exercise are graded as a batch
// (the path a teacher's batch takes: one grader, each submission in its own
// sandboxed processes, unable to see the others), once per test process; each
// file's report, in JSON and every platform's format, is its own file of the
// batch's --output folders. The batch's exit status is the worst of its grades.
const Outcome& grade_in_batch(const Entry& entry) {
  static std::map<std::pair<std::string, std::string>, std::map<fs::path, Outcome>> batches;
  const auto key = std::make_pair(entry.exercise, entry.kind);
  auto& batch = batches[key];
  if (batch.empty()) {
    std::vector<Entry> members;
    for (const auto& other : corpus()) {
      if (other.exercise != entry.exercise || other.kind != entry.kind) continue;
      const auto expect = label_of(other);
      if (skipped_here(expect)) continue;
      for (const auto& path : expect["must_not_create"]) fs::remove(path.as<std::string>());
      members.push_back(other);
    }
    std::vector<std::string> limits;
    if (entry.kind == "hostile") limits = kHostileLimits;
    if (members.size() == 1) {
      batch[members.front().file] = grade_alone(members.front(), limits);
    } else if (!members.empty()) {
      const auto dir = kBuild / "corpus_formats" / entry.exercise / entry.kind;
      fs::remove_all(dir);
      std::vector<std::string> extra = {"--jobs", "1", "--output=json=" + (dir / "json").string()};
      extra.insert(extra.end(), limits.begin(), limits.end());
      for (const auto& platform : kPlatforms) extra.push_back("--output=" + platform + "=" + (dir / platform).string());
      std::vector<fs::path> files;
      for (const auto& member : members) files.push_back(member.file);
      const auto whole = run_batch(entry.exercise, files, extra);
      int worst = 0;
      for (const auto& member : members) {
        const auto stem = member.file.stem().string();
        Outcome outcome;
        outcome.graded.raw = read_file(dir / "json" / (stem + ".json"));
        outcome.graded.report = nlohmann::json::parse(outcome.graded.raw, nullptr, /*allow_exceptions=*/false);
        if (outcome.graded.raw.empty()) outcome.graded.raw = "(no report file; the batch said:)\n" + whole.raw;
        if (!outcome.graded.report.is_discarded()) {
          outcome.graded.exit_code = exit_status_of(outcome.graded.report.value("verdict", ""));
          worst = worse_status(worst, outcome.graded.exit_code);
        }
        for (const auto& platform : kPlatforms) {
          outcome.rendered[platform] = read_file(dir / platform / (stem + kBatchSuffix.at(platform)));
        }
        batch[member.file] = std::move(outcome);
      }
      EXPECT_EQ(whole.exit_code, worst) << "a batch exits with the worst status of its grades\n"
                                        << whole.raw.substr(0, 2000);
      fs::remove_all(dir);
    }
  }
  auto found = batch.find(entry.file);
  if (found == batch.end()) {
    static const Outcome missing;
    ADD_FAILURE() << entry.file << " was not in its batch";
    return missing;
  }
  return found->second;
}

TEST_P(Corpus, GradesAsLabelled) {
  const auto& entry = GetParam();
  auto expect_file = entry.file.parent_path() / (entry.file.stem().string() + ".expect.yaml");
  if (entry.kind == "wrong" || entry.kind == "hostile") {
    ASSERT_TRUE(fs::exists(expect_file)) << "label missing: " << expect_file;
  }
  const YAML::Node expect = label_of(entry);
  if (skipped_here(expect)) {
    GTEST_SKIP() << "needs the sandbox, which does not isolate fully on this machine (see: grade sandbox); "
                    "NOT counted as passed";
  }
  std::vector<std::string> extra;
  if (entry.kind == "hostile") extra = kHostileLimits;
  const bool alone = entry.kind == "solution" || entry.kind == "starter";
  const Outcome outcome = alone ? grade_alone(entry) : grade_in_batch(entry);
  const Graded& graded = outcome.graded;
  for (const auto& path : expect["must_not_create"]) {
    EXPECT_FALSE(fs::exists(path.as<std::string>()))
        << "the submission wrote " << path.as<std::string>() << " outside its scratch folder";
    fs::remove(path.as<std::string>());
  }
  if (expect["no_process_named"]) {
    auto name = expect["no_process_named"].as<std::string>();
    auto left = processes_named(name);
    EXPECT_TRUE(left.empty()) << left.size() << " process(es) named " << name << " outlived the grade";
    for (int pid : left) ::kill(pid, SIGKILL);
  }
  ASSERT_FALSE(graded.report.is_discarded()) << "the grader did not print a JSON report:\n" << describe(graded);
  {
    auto rendered = outcome.rendered;
    auto problems = format_checks::exercism(rendered["exercism"]);
    for (const auto& more :
         {format_checks::gradescope(rendered["gradescope"]), format_checks::prairielearn(rendered["prairielearn"]),
          format_checks::junit(rendered["junit"]), format_checks::classroom(rendered["classroom"]),
          format_checks::agree(graded.report, rendered["exercism"], rendered["gradescope"], rendered["prairielearn"],
                               rendered["junit"], rendered["classroom"])}) {
      problems.insert(problems.end(), more.begin(), more.end());
    }
    for (const auto& problem : problems) ADD_FAILURE() << "platform formats: " << problem;
    // The page's heatmaps: an exercise with an attention probe (its attention_*
    // checks need one) has figures in every grade whose cases were judged (one
    // result per check of exercise.yaml); a correct submission's weights match
    // the reference's on every one.
    format_checks::HtmlFigures figures;
    for (const auto& problem : format_checks::html(rendered["html"], &figures)) ADD_FAILURE() << "html: " << problem;
    const auto checks = YAML::LoadFile((kRoot / "exercises" / entry.exercise / "exercise.yaml").string())["checks"];
    bool probed = false;
    for (const auto& check : checks) {
      probed |= check["kind"] && check["kind"].as<std::string>().rfind("attention_", 0) == 0;
    }
    if (!probed) {
      EXPECT_EQ(figures.drawn + figures.noted, 0) << "attention figures for an exercise without a probe";
    } else if (graded.report["checks"].size() == checks.size()) {
      EXPECT_GT(figures.drawn + figures.noted, 0) << "no attention figure in the HTML report";
    }
    if (entry.kind == "accepted" || entry.kind == "solution") {
      EXPECT_EQ(figures.noted, 0);
      EXPECT_EQ(figures.matching, figures.drawn) << "a correct submission's weights differ from the reference's";
    }
  }
  const auto verdict = graded.report.value("verdict", "");
  ASSERT_FALSE(graded.report["checks"].is_null());
  ASSERT_FALSE(graded.report["focus_points"].empty()) << describe(graded);
  // For tests/diagnosis_share.sh, per exercise.
  const auto results_dir = kBuild / "corpus_results" / entry.exercise;
  fs::create_directories(results_dir);
  const auto not_here = points_not_shown_here(graded.report);
  // A focus point shown as met although a check of it was skipped here (never
  // allowed, but for the GPU's confirmation of a CPU check; counted for the script).
  {
    size_t shown_met = 0;
    for (const auto& focus : graded.report["focus_points"]) {
      const bool met = focus.value("status", "") == "met";
      EXPECT_FALSE(met && not_here.count(focus.value("id", "")))
          << focus.value("id", "") << ": not assessed here, shown as met\n"
          << describe(graded);
      shown_met += met && not_here.count(focus.value("id", ""));
    }
    std::ofstream(results_dir / ".unassessed_met", std::ios::app) << shown_met << "\n";
  }
  // No message states a number no measurement could give (unwritten memory).
  for (const auto& check : graded.report["checks"]) {
    std::string text = check.value("message", "");
    for (const auto& line : check.value("evidence", std::vector<std::string>{})) text += "\n" + line;
    EXPECT_EQ(garbage_number(text), "") << "check " << check.value("id", "") << " prints a garbage number\n"
                                        << describe(graded);
  }

  // Advice that points at the learner's code names only operations the
  // submission contains ("rather than x.sub_(mean)" to a file without sub_
  // sends the learner looking for code they never wrote).
  {
    std::ifstream in(entry.file);
    std::stringstream source;
    source << in.rdbuf();
    for (const auto& check : graded.report["checks"]) {
      for (const auto& name : claimed_calls(check.value("message", ""))) {
        EXPECT_TRUE(mentions(source.str(), name))
            << "check " << check.value("id", "") << " points at " << name
            << "( in the learner's code, which has none: " << check.value("message", "") << "\n"
            << describe(graded);
      }
    }
  }

  // A CUDA exercise's labels hold on a GPU; elsewhere, what can be said.
  {
    const auto learner =
        YAML::LoadFile((kRoot / "exercises" / entry.exercise / "exercise.yaml").string())["learner_files"][0]
            .as<std::string>();
    if (fs::path(learner).extension() == ".cu" && !graded.report.value("gpu_verified", false)) {
      expect_without_gpu(entry, expect, graded);
      return;
    }
  }

  if (entry.kind == "accepted" || entry.kind == "solution") {
    EXPECT_EQ(verdict, "passed") << describe(graded);
    EXPECT_EQ(graded.exit_code, 0) << describe(graded);
    // A focus point with a check skipped (in a pass: for lack of a GPU) or
    // passed with some of its cases unable to run here (a dtype this LibTorch
    // cannot run) is not assessed: never met. Every other one is met.
    for (const auto& focus : graded.report["focus_points"]) {
      const auto id = focus.value("id", "");
      const auto status = focus.value("status", "");
      if (not_here.count(id)) {
        EXPECT_EQ(status, "not_assessed") << id << ": not assessed here, never met\n" << describe(graded);
      } else {
        EXPECT_EQ(status, "met") << id << ": every focus point must be met\n" << describe(graded);
      }
    }
    return;
  }
  if (entry.kind == "starter") {
    EXPECT_EQ(verdict, "failed") << describe(graded);
    EXPECT_EQ(graded.exit_code, 1);
    EXPECT_NE(graded.raw.find("not implemented yet"), std::string::npos) << describe(graded);
    // Code that only throws shows no concept missing: nothing is blamed on one.
    EXPECT_TRUE(focus_points_with(graded.report, "missed").empty()) << describe(graded);
    return;
  }

  const auto want_verdict = expect["verdict"].as<std::string>();
  EXPECT_EQ(verdict, want_verdict) << describe(graded);
  EXPECT_EQ(graded.exit_code, want_verdict == "passed" ? 0 : 1)
      << "a submission that does not pass exits 1, never a grader error\n"
      << describe(graded);
  // The label is the exact missed set: a point missing from the report, or
  // one reported missed that the label does not name, fails.
  auto missed = focus_points_with(graded.report, "missed");
  const auto labelled = labelled_missed(expect);
  bool all_named = true;
  for (const auto& point : labelled) {
    all_named &= missed.count(point) > 0;
    EXPECT_TRUE(missed.count(point)) << "focus point '" << point << "' must be reported missed\n" << describe(graded);
  }
  // (A hostile label without `missed:` is about its verdict only.)
  for (const auto& point : missed) {
    if (entry.kind != "wrong" && !expect["missed"]) break;
    EXPECT_TRUE(labelled.count(point)) << "focus point '" << point
                                       << "' is reported missed, but the label does not name it (a wrong cause)\n"
                                       << describe(graded);
  }
  const bool unexplained = expect["unexplained"] && expect["unexplained"].as<bool>();
  if (entry.kind == "wrong") {
    // For tests/diagnosis_share.sh: was the labelled focus point reported
    // missed, and how many reported points were labelled (recall, precision)?
    size_t correct = 0;
    for (const auto& point : missed) correct += labelled.count(point);
    std::ofstream(results_dir / entry.file.stem().string())
        << (all_named ? "named" : "not named") << "\n"
        << "labelled " << labelled.size() << " reported " << missed.size() << " correct " << correct << "\n"
        << (unexplained ? "unexplained\n" : "");
  }
  if (expect["mistake"]) {
    bool named = false;
    for (const auto& check : graded.report["checks"]) {
      named |= check.value("mistake", "") == expect["mistake"].as<std::string>();
      for (const auto& also : check.value("also_mistakes", nlohmann::json::array()))
        named |= also == expect["mistake"].as<std::string>();
    }
    EXPECT_TRUE(named) << "the diagnosis must name mistake '" << expect["mistake"].as<std::string>() << "'\n"
                       << describe(graded);
  }
  // "unexplained: true": nothing ties the failure to a concept, and the
  // report says so: a failed check states "unexplained" or an error no rule
  // explains, and names no focus point.
  if (unexplained) {
    bool said = false;
    for (const auto& check : graded.report["checks"]) {
      const auto message = check.value("message", "");
      said |= check.value("status", "") == "failed" &&
              (message.rfind("unexplained", 0) == 0 || message.rfind("your code threw an error", 0) == 0);
    }
    EXPECT_TRUE(said) << "the report must say the failure is unexplained\n" << describe(graded);
  }
  // "says": words the message of some failed check must hold (a measured
  // diagnosis the mistake list does not name).
  if (expect["says"]) {
    const auto words = expect["says"].as<std::string>();
    bool said = false;
    for (const auto& check : graded.report["checks"]) {
      said |= check.value("status", "") == "failed" && check.value("message", "").find(words) != std::string::npos;
    }
    EXPECT_TRUE(said) << "a failed check must say \"" << words << "\"\n" << describe(graded);
  }
  // "score": the score the report must give (a file whose every valid case
  // throws earns nothing, whatever it does on a case that must be refused);
  // with it, no check may show as passed unless its result says so by score.
  if (expect["score"]) {
    const auto want = expect["score"].as<double>();
    EXPECT_EQ(graded.report.value("score", -1.0), want) << describe(graded);
    if (want == 0) {
      for (const auto& check : graded.report["checks"]) {
        EXPECT_NE(check.value("status", ""), "passed")
            << "check " << check.value("id", "") << " passed on a file that earns nothing\n" << describe(graded);
      }
    }
  }
  // "raised_at": where the learner's code raised the error it threw, as the
  // evidence of some failed check must say it ("mhsa.cpp:23 in ...").
  if (expect["raised_at"]) {
    const auto want = "raised at " + expect["raised_at"].as<std::string>();
    bool said = false;
    for (const auto& check : graded.report["checks"]) {
      for (const auto& line : check.value("evidence", nlohmann::json::array()))
        said |= line.get<std::string>().rfind(want, 0) == 0;
    }
    EXPECT_TRUE(said) << "no failed check says \"" << want << "\"\n" << describe(graded);
  }
  // "report_lacks": strings the JSON report must not hold anywhere (what the
  // sandbox hides, had it leaked into an error or an output).
  for (const auto& word : expect["report_lacks"]) {
    EXPECT_EQ(graded.raw.find(word.as<std::string>()), std::string::npos)
        << "the report holds \"" << word.as<std::string>() << "\"\n"
        << describe(graded).substr(0, 3000);
  }
  // Learner text is capped: a report stays small whatever the code printed or threw.
  if (expect["max_report_bytes"]) {
    EXPECT_LE(graded.raw.size(), expect["max_report_bytes"].as<size_t>()) << describe(graded).substr(0, 2000);
  }
  // A hang is stopped by its case's own limit, seconds after it began, not at
  // the end of the whole run's (the runner's own time, compile excluded: what
  // it waited for a CPU on a busy machine does not count, judge/stall.h).
  if (expect["max_run_seconds"]) {
    const auto& timing = graded.report["timing"];
    EXPECT_LE(timing.value("run_seconds", 1e9) - timing.value("waited_for_cpu_seconds", 0.0),
              expect["max_run_seconds"].as<double>())
        << describe(graded).substr(0, 2000);
  }
  // The terminal report shows learner text with every control character escaped.
  if (expect["text_report_clean"] && expect["text_report_clean"].as<bool>()) {
    auto text = run_grade(entry, extra, "text");
    EXPECT_EQ(first_unsafe_character(text.raw), "") << text.raw.substr(0, 3000);
  }
  // "<field>_contains": one string or a list, each of which the field must hold.
  for (const std::string field : {"compiler_output", "summary"}) {
    auto wanted = expect[field + "_contains"];
    if (!wanted) continue;
    std::vector<std::string> parts;
    if (wanted.IsSequence()) {
      for (const auto& part : wanted) parts.push_back(part.as<std::string>());
    } else {
      parts.push_back(wanted.as<std::string>());
    }
    for (const auto& part : parts) {
      EXPECT_NE(graded.report.value(field, "").find(part), std::string::npos)
          << field << " must contain \"" << part << "\"\n"
          << describe(graded);
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Submissions, Corpus, ::testing::ValuesIn(corpus()),
                         [](const ::testing::TestParamInfo<Entry>& info) { return info.param.name(); });

// "without_sandbox: same": graded again with --sandbox off (where a machine
// without namespaces falls back to), the verdict and missed set are the
// label's: what stops the attack is the audit, the runner or the checks, not
// the sandbox. Skipped, visibly, where --sandbox off cannot grade at all.
class WithoutSandbox : public ::testing::TestWithParam<Entry> {};

std::vector<Entry> same_without_sandbox() {
  std::vector<Entry> entries;
  for (const auto& entry : corpus()) {
    const auto expect = label_of(entry);
    if (expect["without_sandbox"] && expect["without_sandbox"].as<std::string>() == "same") entries.push_back(entry);
  }
  return entries;
}

TEST_P(WithoutSandbox, SameVerdictAndMissedSet) {
  const auto& entry = GetParam();
  if (auto why = unsandboxed_grading_blocked(); !why.empty()) {
    GTEST_SKIP() << "--sandbox off cannot grade on this machine (" << why << "); NOT counted as passed";
  }
  const auto expect = label_of(entry);
  auto extra = kHostileLimits;
  extra.insert(extra.end(), {"--sandbox", "off"});
  const auto graded = run_grade(entry, extra);
  ASSERT_FALSE(graded.report.is_discarded()) << graded.raw.substr(0, 3000);
  EXPECT_EQ(graded.report.value("verdict", ""), expect["verdict"].as<std::string>()) << describe(graded);
  EXPECT_EQ(focus_points_with(graded.report, "missed"), labelled_missed(expect)) << describe(graded);
}

INSTANTIATE_TEST_SUITE_P(Hostile, WithoutSandbox, ::testing::ValuesIn(same_without_sandbox()),
                         [](const ::testing::TestParamInfo<Entry>& info) { return info.param.name(); });

}  // namespace

namespace {

// An unchanged submission reuses its compiled code; any edit compiles again,
// and the cache never decides a verdict.
// The corpus's detector of numbers read from memory never written: below the
// smallest normal double, not merely tiny (a softmax of large logits gives
// 2.9e-303 on one CPU and 0 on another).
TEST(GarbageNumber, OnlySubnormalValuesAreGarbage) {
  const std::vector<std::pair<std::string, std::string>> rows = {
      {"at (0, 0, 0, 0) expected 2.90085e-303, got 1", ""},
      {"expected 1.5e-5", ""},
      {"max abs error 4.65811e-310", "4.65811e-310"},
      {"got 2.2e-308 then 3e-320", "2.2e-308"},
      {"the e-mail and e-400 are words", ""},
      {"0e-400", ""},
  };
  for (const auto& [text, garbage] : rows) EXPECT_EQ(garbage_number(text), garbage) << text;
}

// Which calls a sentence says the learner's code makes, and which it only advises.
TEST(ClaimedCalls, OnlyCallsPointedAtAsTheLearners) {
  const std::vector<std::pair<std::string, std::vector<std::string>>> rows = {
      {"compute x - mean into a new tensor rather than x.sub_(mean)", {"sub_"}},
      {"look at `k.repeat({1, G, 1, 1})`", {"repeat"}},
      {"which is what k.repeat({1, G, 1, 1}) gives", {"repeat"}},
      {"the scores are divided by d_k instead of sqrt(d_k)", {}},
      {"your torch::softmax(scores, 0) runs over the queries", {"softmax"}},
      {"use masked_fill(mask == 0, -inf) before the softmax", {}},
      {"your code calls repeat, and repeat({1, G, 1, 1}) tiles", {}},
      {"instead of q->view(", {"view"}},
  };
  for (const auto& [text, names] : rows) EXPECT_EQ(claimed_calls(text), names) << text;
  EXPECT_TRUE(mentions("auto y = x.sub_(m);", "sub_"));
  EXPECT_FALSE(mentions("auto y = x.sub(m); // repeat_interleave", "repeat"));
}

TEST(CompileCache, ReusesOnlyUnchangedCode) {
  auto dir = fs::temp_directory_path() / ("grader-cache-test-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  auto file = dir / "sdpa.cpp";
  auto write = [&](const fs::path& from, const std::string& tag) {
    std::ifstream in(from);
    std::stringstream text;
    text << in.rdbuf() << "\n// " << tag << "\n";  // a tag no earlier run has cached
    std::ofstream(file) << text.str();
  };
  Entry entry{"exercise_sdpa", "cache", file};
  auto tag = std::to_string(::getpid()) + "-" + std::to_string(std::random_device{}());
  auto cached = [](const Graded& graded) { return graded.report["timing"].value("compile_cached", false); };

  write(kRoot / "solutions/exercise_sdpa/sdpa.cpp", tag);
  auto first = run_grade(entry, {});
  ASSERT_FALSE(first.report.is_discarded()) << first.raw;
  EXPECT_EQ(first.report["verdict"], "passed") << describe(first);
  EXPECT_FALSE(cached(first));

  auto again = run_grade(entry, {});
  EXPECT_EQ(again.report["verdict"], "passed") << describe(again);
  EXPECT_TRUE(cached(again));

  write(kRoot / "tests/submissions/exercise_sdpa/wrong/no_scaling.cpp", tag);
  auto edited = run_grade(entry, {});
  EXPECT_EQ(edited.report["verdict"], "failed") << describe(edited);
  EXPECT_FALSE(cached(edited));

  auto forced = run_grade(entry, {"--no-cache"});
  EXPECT_EQ(forced.report["verdict"], "failed") << describe(forced);
  EXPECT_FALSE(cached(forced));

  // A source the compiler refuses: its errors are cached, shown as before,
  // under the name the learner knows.
  write(kRoot / "tests/submissions/exercise_sdpa/wrong/no_scaling.cpp", tag + "\nint broken(;");
  auto refused = run_grade(entry, {});
  EXPECT_EQ(refused.report["verdict"], "compile_error") << describe(refused);
  EXPECT_FALSE(cached(refused));
  auto refused_again = run_grade(entry, {});
  EXPECT_EQ(refused_again.report["verdict"], "compile_error") << describe(refused_again);
  EXPECT_TRUE(cached(refused_again));
  EXPECT_EQ(refused_again.report.value("compiler_output", "?"), refused.report.value("compiler_output", "!"));
  EXPECT_NE(refused_again.report.value("compiler_output", "").find(file.string()), std::string::npos)
      << describe(refused_again);
  fs::remove_all(dir);
}

// The grade script's early compile (grader-precompile) fills the cache for a
// single grade, and only for one: the grade that follows takes the compiled
// code and its verdict is the one it gets alone.
TEST(CompileCache, EarlyCompileFillsTheCacheForASingleGrade) {
  auto dir = fs::temp_directory_path() / ("grader-early-test-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  auto file = dir / "sdpa.cpp";
  auto tag = std::to_string(::getpid()) + "-" + std::to_string(std::random_device{}());
  auto write = [&](const fs::path& from, const std::string& text) {
    std::ifstream in(from);
    std::stringstream body;
    body << in.rdbuf() << "\n// " << text << "\n";
    std::ofstream(file) << body.str();
  };
  Entry entry{"exercise_sdpa", "early", file};
  auto cached = [](const Graded& graded) { return graded.report["timing"].value("compile_cached", false); };
  auto early = [&](const std::string& args) {
    std::string command = quote((kBuild / "grader" / "grader-precompile").string()) + " --root " +
                          quote(kRoot.string()) + " --build-dir " + quote(kBuild.string()) + " " + args;
    return std::system(command.c_str());
  };

  // Not a single grade (a folder, a batch of two, --no-cache): nothing compiled ahead.
  write(kRoot / "tests/submissions/exercise_sdpa/wrong/no_scaling.cpp", tag + " skipped");
  EXPECT_EQ(early("exercise_sdpa --submission " + quote(dir.string())), 0);
  EXPECT_EQ(early("exercise_sdpa --submission " + quote(file.string()) + " --submission " + quote(file.string())), 0);
  EXPECT_EQ(early("exercise_sdpa --no-cache --submission " + quote(file.string())), 0);
  EXPECT_EQ(early("class exercise_sdpa --submission " + quote(file.string())), 0);
  auto alone = run_grade(entry, {});
  EXPECT_EQ(alone.report["verdict"], "failed") << describe(alone);
  EXPECT_FALSE(cached(alone));

  write(kRoot / "tests/submissions/exercise_sdpa/wrong/no_scaling.cpp", tag + " ahead");
  EXPECT_EQ(early("exercise_sdpa --format json --submission " + quote(file.string())), 0);
  auto after = run_grade(entry, {});
  EXPECT_EQ(after.report["verdict"], "failed") << describe(after);
  EXPECT_TRUE(cached(after));
  EXPECT_EQ(after.report["focus_points"], alone.report["focus_points"]);

  // Both at once, as the grade script runs them: one compiles, the other
  // waits for it; the verdict is the same either way.
  write(kRoot / "solutions/exercise_sdpa/sdpa.cpp", tag + " together");
  std::thread ahead([&] { early("exercise_sdpa --submission " + quote(file.string())); });
  auto together = run_grade(entry, {});
  ahead.join();
  EXPECT_EQ(together.report["verdict"], "passed") << describe(together);
  fs::remove_all(dir);
}

}  // namespace

namespace {

// A batch graded in parallel: each submission keeps the verdict it gets alone,
// hostile neighbours included; one JSON array, the worst exit status.
TEST(Batch, ParallelGradesKeepTheirVerdicts) {
  auto dir = fs::temp_directory_path() / ("grader-batch-test-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  const fs::path corpus = kRoot / "tests/submissions/exercise_sdpa";
  std::map<std::string, std::string> want = {
      {"model.cpp", "passed"},          {"model_copy.cpp", "passed"},        {"no_scaling.cpp", "failed"},
      {"infinite_loop.cpp", "timeout"}, {"huge_output.cpp", "output_limit"}, {"segfault.cpp", "runtime_error"}};
  // Two identical files compile at once into one cache entry; one is readable
  // by its owner only (the sandboxed compiler runs as another user).
  {
    std::ifstream in(kRoot / "solutions/exercise_sdpa/sdpa.cpp");
    std::stringstream text;
    text << in.rdbuf() << "\n// batch " << ::getpid() << " " << std::random_device{}() << "\n";  // not cached yet
    std::ofstream(dir / "model.cpp") << text.str();
    std::ofstream(dir / "model_copy.cpp") << text.str();
  }
  fs::permissions(dir / "model.cpp", fs::perms::owner_read | fs::perms::owner_write);
  fs::copy_file(corpus / "wrong/no_scaling.cpp", dir / "no_scaling.cpp");
  for (const char* name : {"infinite_loop.cpp", "huge_output.cpp", "segfault.cpp"}) {
    fs::copy_file(corpus / "hostile" / name, dir / name);
  }
  if (sandbox_isolates()) {
    for (const char* name : {"memory_bomb.cpp", "fork_bomb.cpp"}) fs::copy_file(corpus / "hostile" / name, dir / name);
    want["memory_bomb.cpp"] = "memory_limit";
    want["fork_bomb.cpp"] = "forbidden";
  }

  Entry folder{"exercise_sdpa", "batch", dir};
  auto extra = kHostileLimits;
  extra.insert(extra.end(), {"--jobs", "2"});
  auto graded = run_grade(folder, extra);
  ASSERT_TRUE(graded.report.is_array()) << graded.raw.substr(0, 4000);
  EXPECT_EQ(graded.exit_code, 1);
  std::map<std::string, std::string> got;
  for (const auto& report : graded.report) {
    got[fs::path(report.value("submission", "")).filename().string()] = report.value("verdict", "");
  }
  EXPECT_EQ(got, want);
  fs::remove_all(dir);
}

}  // namespace
