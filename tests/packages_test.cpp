// The packages the grading platforms run (`./grade package`, scripts/package.sh),
// each run in its platform's directory layout under a temporary root, as the
// platform would run it, and its output checked against the platform's field
// lists and limits (format_checks.h): a model solution gets full marks, the
// untouched starter does not, a missing file is said, and the entry point
// exits 0 whatever the grade (the platforms read the score from the file).
// Building inside the platform's image (setup.sh, the Dockerfiles) is `./grade
// build`, which the suite's own build does; here the entry points use this
// build (GRADER_ROOT, GRADER_BUILD).
#include <gtest/gtest.h>
#include <stdlib.h>

#include <fstream>
#include <sstream>

#include "corpus_support.h"
#include "format_checks.h"

namespace {
namespace fs = std::filesystem;
using corpus::kBuild;
using corpus::kRoot;
using corpus::quote;
using corpus::run_command;

std::string read(const fs::path& file) {
  std::ifstream in(file, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

class Package : public ::testing::Test {
 protected:
  void SetUp() override {
    char pattern[] = "/tmp/grade-package-test-XXXXXX";
    work_ = mkdtemp(pattern);
  }
  void TearDown() override { fs::remove_all(work_); }
  // Runs `command` with this build standing in for the image's grader.
  corpus::Graded run(const std::string& command) {
    return run_command("GRADER_ROOT=" + quote(kRoot.string()) + " GRADER_BUILD=" + quote(kBuild.string()) + " " +
                           command + " 2>&1",
                       false);
  }
  corpus::Graded package(const std::string& platform, const std::string& exercises, const fs::path& to) {
    return run_command("bash " + quote((kRoot / "scripts" / "package.sh").string()) + " " + platform + " " +
                           exercises + " --to " + quote(to.string()) + " 2>&1",
                       false);
  }
  void put(const fs::path& from, const fs::path& to) {
    fs::create_directories(to.parent_path());
    fs::copy_file(from, to, fs::copy_options::overwrite_existing);
  }
  fs::path work_;
  const fs::path solution_ = kRoot / "solutions" / "exercise_sdpa" / "sdpa.cpp";
  const fs::path starter_ = kRoot / "exercises" / "exercise_sdpa" / ".starter" / "sdpa.cpp";
};

TEST_F(Package, RefusesWhatItCannotPackage) {
  EXPECT_EQ(package("blackboard", "exercise_sdpa", work_ / "x").exit_code, 2);
  EXPECT_EQ(package("gradescope", "exercise_nope", work_ / "x").exit_code, 2);
  EXPECT_EQ(package("gradescope", "exercise_sdpa exercise_mhsa", work_ / "x").exit_code, 2)
      << "one exercise per Gradescope assignment";
  EXPECT_EQ(package("exercism", "exercise_softmax_cuda", work_ / "x").exit_code, 2)
      << "the platforms have no GPU: a CUDA exercise is never assessed there";
}

TEST_F(Package, Gradescope) {
  auto made = package("gradescope", "exercise_sdpa", work_ / "out");
  ASSERT_EQ(made.exit_code, 0) << made.raw;
  // Gradescope unpacks the zip in /autograder/source.
  const auto top = work_ / "autograder";
  fs::create_directories(top / "source");
  auto unpacked = run_command("cd " + quote((top / "source").string()) + " && cmake -E tar xf " +
                                  quote((work_ / "out" / "autograder.zip").string()) + " 2>&1",
                              false);
  ASSERT_EQ(unpacked.exit_code, 0) << unpacked.raw;
  for (const char* name : {"setup.sh", "run_autograder", "grader/grade", "grader/exercises/exercise_sdpa/exercise.yaml"})
    EXPECT_TRUE(fs::exists(top / "source" / name)) << name << " is not in the zip";
  EXPECT_FALSE(fs::exists(top / "source" / "grader" / "build")) << "the zip holds a build folder";
  // A container may not isolate a submission from the files beside it: no correct answers in them.
  EXPECT_FALSE(fs::exists(top / "source" / "grader" / "solutions")) << "the zip holds the model solutions";
  EXPECT_FALSE(fs::exists(top / "source" / "grader" / "tests")) << "the zip holds the corpus (correct answers too)";
  // Learner files as their starters, whatever the packager's checkout holds.
  for (const auto& entry : fs::directory_iterator(top / "source" / "grader" / "exercises")) {
    if (!fs::is_directory(entry.path() / ".starter")) continue;
    for (const auto& starter : fs::directory_iterator(entry.path() / ".starter")) {
      EXPECT_EQ(read(entry.path() / starter.path().filename()), read(starter.path()))
          << entry.path().filename() << ": the package's learner file is not its starter";
    }
  }
  EXPECT_NE(read(top / "source" / "setup.sh").find("./grade build exercise_sdpa"), std::string::npos);
  // After the build, the reference's and the checks' sources, the compiled
  // reference and the grade program are the owner's alone (the submission's
  // code runs as nobody, and Gradescope's container has no sandbox).
  const auto setup = read(top / "source" / "setup.sh");
  EXPECT_LT(setup.find("\n./grade build"), setup.find("\nscripts/seal.sh")) << "the package is not sealed after its build";
  {
    const auto grader = top / "source" / "grader";
    const auto build = grader / "build";
    for (const auto& made : {build / "reference", build / "grader"}) fs::create_directories(made);
    std::ofstream(build / "reference" / "libreference.a") << "x";
    std::ofstream(build / "grader" / "grade") << "x";
    auto sealed = run("bash " + quote((grader / "scripts" / "seal.sh").string()) + " " + quote(grader.string()) + " " +
                      quote(build.string()));
    ASSERT_EQ(sealed.exit_code, 0) << sealed.raw;
    const auto others = fs::perms::group_all | fs::perms::others_all;
    for (const auto& top_path : {grader / "reference", grader / "grader" / "checks", build / "reference",
                                 build / "grader" / "grade"}) {
      ASSERT_TRUE(fs::exists(top_path)) << top_path << " is not in the package";
      std::vector<fs::path> paths{top_path};
      if (fs::is_directory(top_path)) {
        for (const auto& entry : fs::recursive_directory_iterator(top_path)) paths.push_back(entry.path());
      }
      for (const auto& path : paths) {
        EXPECT_EQ(fs::status(path).permissions() & others, fs::perms::none) << path << " is readable by others";
      }
    }
    // What the runner (nobody) reads stays readable: the exercise's interface.
    EXPECT_NE(fs::status(grader / "exercises" / "exercise_sdpa" / "sdpa.h").permissions() & fs::perms::others_read,
              fs::perms::none);
    fs::remove_all(build);
  }

  const auto results = top / "results" / "results.json";
  auto grade = [&](const std::string& what) {
    fs::remove_all(top / "results");
    auto ran = run("AUTOGRADER_ROOT=" + quote(top.string()) + " bash " + quote((top / "source" / "run_autograder").string()));
    EXPECT_EQ(ran.exit_code, 0) << what << ": run_autograder exits 0 whatever the grade\n" << ran.raw;
    const auto text = read(results);
    for (const auto& problem : format_checks::gradescope(text)) ADD_FAILURE() << what << ": " << problem << "\n" << text;
    return nlohmann::json::parse(text, nullptr, false);
  };
  // The tests' maximum: Gradescope's results state no total of their own.
  auto maximum = [](const nlohmann::json& json) {
    double max = 0;
    for (const auto& test : json.value("tests", nlohmann::json::array())) max += test.value("max_score", 0.0);
    return max;
  };
  put(solution_, top / "submission" / "sdpa.cpp");
  auto json = grade("the model solution");
  EXPECT_GT(maximum(json), 0);
  EXPECT_EQ(json.value("score", -1.0), maximum(json)) << "full marks without a GPU";

  fs::remove_all(top / "submission");
  put(starter_, top / "submission" / "exercises" / "exercise_sdpa" / "sdpa.cpp");  // the repository's layout
  json = grade("the starter");
  EXPECT_LT(json.value("score", -1.0), maximum(json));

  // A hand-in whose exercises/ folder is a link to the model solutions: not followed.
  fs::remove_all(top / "submission");
  fs::create_directories(top / "submission");
  fs::create_directory_symlink(kRoot / "solutions", top / "submission" / "exercises");
  json = grade("a link out of the hand-in");
  EXPECT_EQ(json.value("score", -1.0), 0) << json.dump();
  EXPECT_NE(json.value("output", "").find("not a file inside"), std::string::npos) << json.dump();

  fs::remove_all(top / "submission");
  fs::create_directories(top / "submission");
  json = grade("nothing handed in");
  EXPECT_NE(json.value("output", "").find("sdpa.cpp"), std::string::npos) << json.dump();
}

TEST_F(Package, Exercism) {
  auto made = package("exercism", "exercise_sdpa exercise_causal_attention", work_ / "runner");
  ASSERT_EQ(made.exit_code, 0) << made.raw;
  const auto run_sh = quote((work_ / "runner" / "bin" / "run.sh").string());
  auto grade = [&](const std::string& slug, const fs::path& input, const std::string& what) {
    const auto output = work_ / ("output-" + slug);
    fs::remove_all(output);
    auto ran = run("bash " + run_sh + " " + slug + " " + quote(input.string()) + " " + quote(output.string()));
    EXPECT_EQ(ran.exit_code, 0) << what << ": run.sh exits 0 whatever the grade\n" << ran.raw;
    const auto text = read(output / "results.json");
    for (const auto& problem : format_checks::exercism(text)) ADD_FAILURE() << what << ": " << problem << "\n" << text;
    return nlohmann::json::parse(text, nullptr, false);
  };
  put(solution_, work_ / "solution" / "sdpa.cpp");
  EXPECT_EQ(grade("sdpa", work_ / "solution", "the model solution").value("status", ""), "pass");
  put(starter_, work_ / "starter" / "sdpa.cpp");
  EXPECT_EQ(grade("sdpa", work_ / "starter", "the starter").value("status", ""), "fail");
  EXPECT_EQ(grade("softmax-cuda", work_ / "starter", "a slug not in the package").value("status", ""), "error");
  EXPECT_NE(read(work_ / "runner" / "Dockerfile").find("/opt/test-runner/bin/run.sh"), std::string::npos);
}

TEST_F(Package, PrairieLearn) {
  auto made = package("prairielearn", "exercise_sdpa", work_ / "course");
  ASSERT_EQ(made.exit_code, 0) << made.raw;
  const auto question = work_ / "course" / "questions" / "exercise_sdpa";
  auto info = nlohmann::json::parse(read(question / "info.json"), nullptr, false);
  ASSERT_FALSE(info.is_discarded());
  const auto options = info["externalGradingOptions"];
  EXPECT_EQ(options.value("entrypoint", ""), "/attention-grader/run.sh exercise_sdpa");
  EXPECT_GT(options.value("timeout", 0), 30) << "PrairieLearn's 30 s default is too short for a first compile";
  EXPECT_EQ(read(question / "sdpa.cpp"), read(starter_));
  EXPECT_NE(read(question / "question.html").find("pl-external-grader-results"), std::string::npos);
  // The image copies the package to /attention-grader: run.sh is where the entry point says.
  EXPECT_TRUE(fs::exists(work_ / "course" / "run.sh"));

  const auto top = work_ / "grade";
  auto grade = [&](const std::string& what) {
    fs::remove_all(top / "results");
    auto ran = run("PL_GRADE_ROOT=" + quote(top.string()) + " bash " +
                   quote((work_ / "course" / "run.sh").string()) + " exercise_sdpa");
    EXPECT_EQ(ran.exit_code, 0) << what << ": run.sh exits 0 whatever the grade\n" << ran.raw;
    const auto text = read(top / "results" / "results.json");
    EXPECT_LT(text.size(), 1000u * 1000u) << what << ": PrairieLearn reads at most 1 MB of results";
    for (const auto& problem : format_checks::prairielearn(text)) ADD_FAILURE() << what << ": " << problem << "\n" << text;
    return nlohmann::json::parse(text, nullptr, false);
  };
  put(solution_, top / "student" / "sdpa.cpp");
  auto json = grade("the model solution");
  EXPECT_EQ(json.value("score", -1.0), 1.0);
  EXPECT_TRUE(json.value("gradable", false));
  put(starter_, top / "student" / "sdpa.cpp");
  EXPECT_LT(grade("the starter").value("score", -1.0), 1.0);
}

}  // namespace
