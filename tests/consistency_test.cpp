// Each exercise checked as a whole, the way a contest's problem-package
// verifier checks a problem before it is used: the parts exist, the corpus
// exercises every focus point and every known mistake, the known mistakes can
// be told apart on every case the diagnosis replays them on, and the reference
// reads exactly the parameters exercise.yaml declares.
//
// The corpus labels are the link to real grading: corpus_test asserts that
// every wrong submission has the focus points of its `missed:` label reported
// missed and the `mistake:` of its label named, so a focus point or mistake
// that appears in some label is one the grader has been seen to report.
#include <ATen/ATen.h>
#include <gtest/gtest.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cstdlib>
#include <functional>
#include <filesystem>
#include <map>
#include <set>
#include <sstream>

#include "checks/check.h"
#include "checks/kit/kit.h"
#include "exercise.h"

namespace grader {
namespace {
namespace fs = std::filesystem;

fs::path root() {
  const char* env = std::getenv("GRADER_ROOT");
  return env ? fs::path(env) : fs::path(GRADER_SOURCE_DIR);
}

std::vector<std::string> exercise_ids() { return list_exercises(root() / "exercises"); }

std::vector<fs::path> submissions(const std::string& exercise, const std::string& kind) {
  std::vector<fs::path> files;
  auto dir = root() / "tests" / "submissions" / exercise / kind;
  if (!fs::is_directory(dir)) return files;
  for (const auto& item : fs::directory_iterator(dir)) {
    if (item.path().extension() == ".cpp" || item.path().extension() == ".cu") files.push_back(item.path());
  }
  std::sort(files.begin(), files.end());
  return files;
}

YAML::Node label_of(const fs::path& submission) {
  auto file = submission.parent_path() / (submission.stem().string() + ".expect.yaml");
  return fs::exists(file) ? YAML::LoadFile(file.string()) : YAML::Node();
}

class Consistency : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    exercise_ = load_exercise(root() / "exercises" / GetParam());
    suite_ = make_suite(exercise_);
    kit_ = dynamic_cast<kit::Kit*>(suite_.get());
  }
  // The yaml cases as planned (the twins and probes the kit adds are not replayed).
  std::vector<CaseRun> planned_cases() {
    std::set<std::string> ids;
    for (const auto& spec : exercise_.cases) ids.insert(spec.id);
    std::vector<CaseRun> runs;
    for (auto& request : kit_->plan(20261122)) {
      if (ids.count(request.string("case"))) runs.push_back({request, {}});
    }
    return runs;
  }
  Exercise exercise_;
  std::unique_ptr<Suite> suite_;
  kit::Kit* kit_ = nullptr;
};

TEST_P(Consistency, HasItsParts) {
  EXPECT_TRUE(fs::exists(exercise_.learner_file())) << "starter missing: " << exercise_.learner_file();
  for (const auto& file : exercise_.learner_files) {
    EXPECT_TRUE(fs::exists(root() / "solutions" / exercise_.id / file))
        << "model solution missing: solutions/" << exercise_.id << "/" << file;
  }
  EXPECT_GE(submissions(exercise_.id, "accepted").size(), 3u) << "fewer than 3 accepted styles";
  EXPECT_GE(submissions(exercise_.id, "wrong").size(), 8u) << "fewer than 8 wrong submissions";
  for (const auto& file : submissions(exercise_.id, "wrong")) {
    auto label = label_of(file);
    // Or, where no evidence ties its failure to a concept, says so (unexplained: true).
    const bool unexplained = label && label["unexplained"] && label["unexplained"].as<bool>();
    EXPECT_TRUE(label && label["missed"] && (label["missed"].size() > 0 || unexplained))
        << file << ": a wrong submission is labelled with the focus points it misses (or unexplained: true)";
  }
}

// Every focus point is reported missed by at least one wrong (or hostile) submission.
TEST_P(Consistency, EveryFocusPointIsMissedByTheCorpus) {
  std::set<std::string> missed;
  auto files = submissions(exercise_.id, "wrong");
  for (const auto& file : submissions(exercise_.id, "hostile")) files.push_back(file);
  for (const auto& file : files) {
    auto label = label_of(file);
    for (const auto& point : label["missed"]) {
      auto id = point.as<std::string>();
      EXPECT_NO_THROW(exercise_.focus_point(id)) << file << " names an undeclared focus point '" << id << "'";
      missed.insert(id);
    }
  }
  for (const auto& point : exercise_.focus_points) {
    EXPECT_TRUE(missed.count(point.id)) << "no wrong submission is labelled as missing focus point '" << point.id
                                        << "': the grader's ability to report it is untested";
  }
}

// Every known mistake has a way to be named and is named for one submission.
TEST_P(Consistency, EveryKnownMistakeIsNamedForTheCorpus) {
  std::set<std::string> nameable(kit_->replayable().begin(), kit_->replayable().end());
  for (const auto& feature : exercise_.features) {
    if (!feature.mistake.empty()) nameable.insert(feature.mistake);
  }
  for (const auto& rule : exercise_.error_rules) {
    if (!rule.mistake.empty()) nameable.insert(rule.mistake);
  }
  std::set<std::string> labelled;
  for (const auto& file : submissions(exercise_.id, "wrong")) {
    auto label = label_of(file);
    if (!label["mistake"]) continue;
    auto id = label["mistake"].as<std::string>();
    EXPECT_NO_THROW(exercise_.mistake(id)) << file << " names an undeclared mistake '" << id << "'";
    labelled.insert(id);
  }
  for (const auto& mistake : exercise_.mistakes) {
    EXPECT_TRUE(nameable.count(mistake.id))
        << "mistake '" << mistake.id << "' is neither replayed by the reference nor named by a feature or an "
        << "error rule: the grader can never name it";
    EXPECT_TRUE(labelled.count(mistake.id)) << "no wrong submission is labelled with mistake '" << mistake.id << "'";
  }
}

// Two known mistakes that give the same result on a case (scaling by
// sqrt(Nq) is no scaling when Nq = 1) must give different results on another
// case, which the diagnosis uses to tell them apart; and each mistake shows
// (differs from the correct result) on at least one case.
TEST_P(Consistency, KnownMistakesAreDistinguishable) {
  const auto runs = planned_cases();
  ASSERT_FALSE(runs.empty());
  std::map<std::string, int> shows;
  std::map<std::pair<std::string, std::string>, std::string> coincide;  // pair -> a case where they do
  std::set<std::pair<std::string, std::string>> separated;
  for (const auto& run : runs) {
    const auto& tolerance = exercise_.tolerance(run.request.string_or("dtype", "float64"));
    auto same = [&](const kit::Tensors& a, const kit::Tensors& b) {
      if (a.size() != b.size()) return false;
      for (const auto& [name, tensor] : a) {
        auto other = b.find(name);
        if (other == b.end()) return false;
        // Either one could be the learner's: alike if either way matches.
        if (!compare(tensor, other->second, tolerance).ok && !compare(other->second, tensor, tolerance).ok)
          return false;
      }
      return true;
    };
    const auto correct = kit_->expected(run);
    std::vector<std::pair<std::string, kit::Tensors>> replayed;
    for (const auto& id : kit_->replayable()) {
      auto result = kit_->expected(run, id);
      if (!result.empty()) replayed.emplace_back(id, std::move(result));
    }
    for (size_t i = 0; i < replayed.size(); ++i) {
      const bool shows_i = !same(replayed[i].second, correct);
      shows[replayed[i].first] += shows_i;
      for (size_t j = i + 1; j < replayed.size(); ++j) {
        auto pair = std::make_pair(replayed[i].first, replayed[j].first);
        if (!same(replayed[i].second, replayed[j].second)) {
          separated.insert(pair);
        } else if (shows_i && !coincide.count(pair)) {
          coincide[pair] = run.describe();
        }
      }
    }
  }
  for (const auto& [pair, where] : coincide) {
    EXPECT_TRUE(separated.count(pair)) << "mistakes '" << pair.first << "' and '" << pair.second
                                       << "' give the same result on every case where both replay (e.g. " << where
                                       << "): no case tells them apart";
  }
  for (const auto& id : kit_->replayable()) {
    EXPECT_GT(shows[id], 0) << "mistake '" << id << "' gives the correct result on every case: it can never be "
                            << "replayed (add a case where it shows)";
  }
}

// Every replayable mistake, made exactly (a simulated learner answers each
// case with the reference bent by that mistake), is named as itself and as
// nothing else, and its focus point is reported missed.
TEST_P(Consistency, EachMistakeMadeAloneIsNamedAsItself) {
  std::string numerics_check;
  for (const auto& check : exercise_.checks) {
    if (check.kind == "numerics" && numerics_check.empty()) numerics_check = check.id;
  }
  for (const auto& mistake : kit_->replayable()) {
    SCOPED_TRACE("simulated mistake: " + mistake);
    JudgeInput input;
    input.seed = 20261122;
    for (auto& request : kit_->plan(input.seed)) {
      CaseRun run{request, {}};
      if (request.string_or("kind", "forward") == "construct") {
        run.response.strings["error"] = "refused (simulated)";  // a correct constructor refuses
      } else if (request.string_or("kind", "forward") == "fit") {
        run.response.strings["error"] = "training is not simulated";
      } else {
        auto outputs = kit_->expected(kit_->data_of(run), mistake);
        if (outputs.empty()) run.response.strings["error"] = "this mistake cannot run this case (simulated)";
        // In the case's dtype; a narrow one crosses the channel as float64, as from the runner.
        const auto dtype = wire::floating_dtype(request.string_or("dtype", "float64"));
        const auto sent = dtype == at::kFloat ? at::kFloat : at::kDouble;
        for (const auto& [name, tensor] : outputs) run.response.tensors[name] = tensor.to(dtype).to(sent);
      }
      input.cases[request.string("case")] = run;
    }
    std::set<std::string> named, missed;
    for (const auto& result : suite_->judge(input)) {
      if (!result.mistake.empty()) named.insert(result.mistake);
      if (result.status == CheckStatus::failed) missed.insert(result.focus_point);
    }
    // Explained from any case where it shows, it is the same mistake.
    for (const auto& spec : exercise_.cases) {
      if (!kit::unsupported_dtype(spec.trait("dtype", "float64")).empty()) continue;  // not planned here
      if (kit_->status(spec.id) != kit::CaseStatus::differs) continue;
      auto explained = kit_->explain(numerics_check, spec.id);
      EXPECT_EQ(explained.mistake, mistake)
          << "explained from " << input.at(spec.id).describe() << ": " << explained.message;
    }
    EXPECT_TRUE(named.count(mistake)) << "not named; named instead: " << named.size();
    for (const auto& other : named) EXPECT_EQ(other, mistake) << "another mistake is named too";
    EXPECT_TRUE(missed.count(exercise_.mistake(mistake).focus_point))
        << "its focus point '" << exercise_.mistake(mistake).focus_point << "' is not reported missed";
  }
}

// A learner's output of another shape (0-dim, an empty last axis) in every
// case is a failed check and the grade goes on: never a grader fault, and never
// a pass (a fuzz over output shapes; the hostile corpus holds real files).
TEST_P(Consistency, OddOutputShapesFailAndNeverFaultTheGrader) {
  const std::vector<std::pair<std::string, std::function<at::Tensor(const at::Tensor&)>>> odd = {
      {"0-dim", [](const at::Tensor& t) { return t.sum(); }},
      {"empty last axis", [](const at::Tensor& t) { return t.dim() > 0 ? t.narrow(-1, 0, 0) : t.reshape({1, 0}); }}};
  for (const auto& output : exercise_.signature.outputs) {
    for (const auto& [shape, bend] : odd) {
      SCOPED_TRACE("the output '" + output.name + "' " + shape + " in every case");
      JudgeInput input;
      input.seed = 20261126;
      for (auto& request : kit_->plan(input.seed)) {
        CaseRun run{request, {}};
        const auto kind = request.string_or("kind", "forward");
        if (kind == "construct") {
          run.response.strings["error"] = "refused (simulated)";
        } else if (kind == "fit") {
          run.response.strings["error"] = "training is not simulated";
        } else {
          auto outputs = kit_->expected(kit_->data_of(run));
          if (outputs.empty()) run.response.strings["error"] = "not simulated";
          for (const auto& [name, tensor] : outputs) {
            run.response.tensors[name] = name == output.name ? bend(tensor) : tensor;
          }
        }
        input.cases[request.string("case")] = run;
      }
      std::vector<CheckResult> results;
      ASSERT_NO_THROW(results = suite_->judge(input));
      EXPECT_TRUE(std::any_of(results.begin(), results.end(),
                              [](const CheckResult& r) { return r.status == CheckStatus::failed; }))
          << "no check fails";
    }
  }
}

// The reference reads every parameter exercise.yaml declares and nothing
// else. (Whether the output depends on each is measured, not assumed: a key
// bias adds the same amount to every score of a query, which the softmax
// cancels; see the kit's `dependence` kind.)
TEST_P(Consistency, ReferenceReadsExactlyTheDeclaredParameters) {
  const auto runs = planned_cases();
  ASSERT_FALSE(runs.empty());
  const auto& run = runs.front();
  auto data = kit_->data_of(run);
  std::set<std::string> declared;
  for (const auto& param : kit::parameters_of(exercise_.signature.parameters, data.dims)) declared.insert(param.name);
  EXPECT_EQ(keys_of(data.params), std::vector<std::string>(declared.begin(), declared.end()));
  kit::Tensors base;
  ASSERT_NO_THROW(base = kit_->expected(data)) << "the reference fails with exactly the declared parameters";
  ASSERT_FALSE(base.empty());
  for (const auto& name : declared) {
    auto without = data;
    without.params.erase(name);
    EXPECT_ANY_THROW(kit_->expected(without)) << "the reference never reads declared parameter '" << name << "'";
  }
}

INSTANTIATE_TEST_SUITE_P(Exercises, Consistency, ::testing::ValuesIn(exercise_ids()),
                         [](const ::testing::TestParamInfo<std::string>& info) { return info.param; });

}  // namespace
}  // namespace grader
