// The same verdict on every seed: each labelled file of the corpus (accepted,
// wrong) and each model solution is graded on five fixed seeds besides its own
// (the corpus test grades it on the seed its bytes give), and on every one its
// verdict and missed focus points must be exactly its label's. A verdict that
// holds only for the inputs one seed draws is luck, not a diagnosis.
//
// One CTest test per exercise (seed_sweep.<exercise>): its files are graded as
// one batch with `grade --seeds`, whose runner runs all five seeds of a file
// (grade.h: grade_on_seeds), so a sweep costs little more than one grade each.
// Hostile files are left out: their verdicts come from limits and the sandbox,
// not from the inputs drawn, and the corpus test grades them.
#include <gtest/gtest.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "corpus_support.h"

namespace {
namespace fs = std::filesystem;
using namespace corpus;

const std::vector<int> kSeeds = {1, 2, 3, 4, 5};

// What a file must get on every seed: its verdict and exact missed set.
struct Expected {
  std::string verdict;
  std::set<std::string> missed;
};

std::string describe(const std::set<std::string>& points) {
  std::string out = "{";
  for (const auto& point : points) out += (out.size() > 1 ? ", " : "") + point;
  return out + "}";
}

// The swept files of `exercise` and their labels.
std::map<std::string, Expected> swept_files(const std::string& exercise) {
  std::map<std::string, Expected> files;
  auto add = [&](const fs::path& dir, bool wrong) {
    if (!fs::is_directory(dir)) return;
    for (const auto& item : fs::directory_iterator(dir)) {
      const auto& file = item.path();
      if (file.extension() != ".cpp" && file.extension() != ".cu") continue;
      Expected expected{"passed", {}};
      if (wrong) {
        auto label = YAML::LoadFile((dir / (file.stem().string() + ".expect.yaml")).string());
        expected.verdict = label["verdict"].as<std::string>();
        expected.missed = labelled_missed(label);
      }
      files[file.string()] = expected;
    }
  };
  add(kRoot / "tests" / "submissions" / exercise / "accepted", false);
  add(kRoot / "tests" / "submissions" / exercise / "wrong", true);
  add(kRoot / "solutions" / exercise, false);
  return files;
}

class SeedSweep : public ::testing::TestWithParam<std::string> {};

TEST_P(SeedSweep, EveryFileKeepsItsLabelOnFiveSeeds) {
  const auto exercise = GetParam();
  const auto files = swept_files(exercise);
  ASSERT_FALSE(files.empty()) << exercise << ": no file to sweep";
  std::vector<fs::path> paths;
  for (const auto& [path, expected] : files) paths.push_back(path);

  // A CUDA exercise's kernels run only on a GPU: without one nothing of its
  // grade depends on the inputs drawn.
  const auto learner =
      YAML::LoadFile((kRoot / "exercises" / exercise / "exercise.yaml").string())["learner_files"][0].as<std::string>();
  if (fs::path(learner).extension() == ".cu") {
    auto probe = run_batch(exercise, {paths.front()}, {"--seeds", "1"});
    const bool ran =
        probe.report.is_array() && !probe.report.empty() && probe.report.front().value("gpu_verified", false);
    if (!ran)
      GTEST_SKIP() << exercise
                   << ": no GPU ran its kernels here, so no verdict depends on a seed; NOT counted as passed";
  }

  std::string seeds;
  for (int seed : kSeeds) seeds += (seeds.empty() ? "" : ",") + std::to_string(seed);
  auto graded = run_batch(exercise, paths, {"--seeds", seeds, "--jobs", "2"});
  ASSERT_TRUE(graded.report.is_array()) << graded.raw.substr(0, 4000);
  EXPECT_EQ(graded.report.size(), files.size() * kSeeds.size()) << graded.raw.substr(0, 4000);

  std::map<std::string, std::set<int>> seen;  // the seeds each file got a report for
  std::vector<std::string> differing;
  for (const auto& report : graded.report) {
    const auto submission = report.value("submission", "");
    const auto found = files.find(submission);
    ASSERT_NE(found, files.end()) << "a report for a file not asked for: " << submission;
    const int seed = report.value("seed", -1);
    seen[submission].insert(seed);
    const auto verdict = report.value("verdict", "");
    const auto missed = focus_points_with(report, "missed");
    if (verdict != found->second.verdict || missed != found->second.missed) {
      std::ostringstream line;
      line << fs::relative(submission, kRoot).string() << " on seed " << seed << ": " << verdict << " "
           << describe(missed) << "; labelled " << found->second.verdict << " " << describe(found->second.missed)
           << " (replay: ./grade " << exercise << " --seed " << seed << " --submission "
           << fs::relative(submission, kRoot).string() << ")";
      // What its checks said, so that a difference seen once can be studied;
      // for a verdict no check gives (a compile error, a crash) the summary
      // and what the compiler and the program printed.
      line << "\n      summary: " << report.value("summary", "").substr(0, 300);
      for (const char* stream : {"compiler_output", "stderr"}) {
        const auto text = report.value(stream, "");
        if (!text.empty()) line << "\n      " << stream << ": " << text.substr(0, 800);
      }
      for (const auto& check : report["checks"]) {
        if (check.value("status", "") == "passed") continue;
        line << "\n      " << check.value("id", "") << " [" << check.value("status", "") << ", "
             << check.value("focus_point", "") << "]: " << check.value("message", "").substr(0, 300);
      }
      differing.push_back(line.str());
    }
  }
  const std::set<int> all(kSeeds.begin(), kSeeds.end());
  for (const auto& [path, expected] : files) {
    EXPECT_EQ(seen[path], all) << path << ": a report is missing for some seed";
  }
  std::string shown;
  for (const auto& line : differing) shown += "  " + line + "\n";
  EXPECT_TRUE(differing.empty()) << differing.size() << " grade(s) of " << files.size() * kSeeds.size()
                                 << " differ from their label:\n"
                                 << shown;
  std::printf("%s: %zu files x %zu seeds, %zu differ from their label\n", exercise.c_str(), files.size(), kSeeds.size(),
              differing.size());
}

// `--seeds` gives each seed the report a lone grade with `--seed` gives (the
// run's times aside), also where the shared run cannot finish: a crash or a
// hang in one seed's cases is graded again seed by seed, each its own verdict.
TEST(SeedsOption, EachSeedGetsTheReportOfALoneGrade) {
  const std::string exercise = "exercise_sdpa";
  const auto wrong = kRoot / "tests/submissions/exercise_sdpa/wrong/mask_inverted.cpp";
  auto together = run_batch(exercise, {wrong}, {"--seeds", "3,4"});
  ASSERT_TRUE(together.report.is_array() && together.report.size() == 2) << together.raw.substr(0, 3000);
  for (const auto& report : together.report) {
    const int seed = report.value("seed", -1);
    auto alone = run_batch(exercise, {wrong}, {"--seed", std::to_string(seed), "--jobs", "1"});
    ASSERT_TRUE(alone.report.is_object()) << alone.raw.substr(0, 3000);
    for (const char* field : {"verdict", "summary", "checks", "focus_points", "score", "stdout", "stderr"}) {
      EXPECT_EQ(report[field], alone.report[field]) << "seed " << seed << ", " << field;
    }
  }
  // A crash ends the shared run: each seed is graded in its own runner.
  const auto crash = kRoot / "tests/submissions/exercise_sdpa/hostile/segfault.cpp";
  auto crashed = run_batch(exercise, {crash}, {"--seeds", "1,2", "--time-limit", "5"});
  ASSERT_TRUE(crashed.report.is_array() && crashed.report.size() == 2) << crashed.raw.substr(0, 3000);
  for (const auto& report : crashed.report) {
    EXPECT_EQ(report.value("verdict", ""), "runtime_error") << report.dump().substr(0, 2000);
  }
  EXPECT_EQ(crashed.exit_code, 1);
  // --seeds and --seed do not go together; --seeds is not for a class.
  auto both = run_command(grade_command() + " exercise_sdpa --seed 1 --seeds 2,3", false);
  EXPECT_EQ(both.exit_code, 2) << both.raw;
  auto empty = run_command(grade_command() + " exercise_sdpa --seeds x 2>&1", false);
  EXPECT_EQ(empty.exit_code, 2) << empty.raw;
}

INSTANTIATE_TEST_SUITE_P(Exercises, SeedSweep, ::testing::ValuesIn(exercise_ids()),
                         [](const ::testing::TestParamInfo<std::string>& info) { return info.param; });

}  // namespace
