#include "checks/verify.h"
#include "exercise/questions.h"

#include <ATen/ATen.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <set>

#include "checks/check.h"
#include "checks/kit/kit.h"
#include "base/errors.h"
#include "exercise/exercise.h"

namespace grader {
namespace {
namespace fs = std::filesystem;
using Problems = std::vector<std::string>;

YAML::Node label_of(const fs::path& submission) {
  auto file = submission.parent_path() / (submission.stem().string() + ".expect.yaml");
  return fs::exists(file) ? YAML::LoadFile(file.string()) : YAML::Node();
}

// The exercise with its check code, as a grade loads them.
struct Subject {
  Exercise exercise;
  std::unique_ptr<Suite> suite;
  kit::Kit* kit = nullptr;
};

Subject load(const fs::path& root, const std::string& id) {
  Subject subject;
  subject.exercise = load_exercise(root / "exercises" / id);
  subject.suite = make_suite(subject.exercise);
  subject.kit = dynamic_cast<kit::Kit*>(subject.suite.get());
  if (!subject.kit) throw ConfigError(id + ": its check code does not build on the kit (grader/checks/kit/kit.h)");
  return subject;
}

// The yaml cases as planned (the twins and probes the kit adds are not replayed).
std::vector<CaseRun> planned_cases(Subject& subject) {
  std::set<std::string> ids;
  for (const auto& spec : subject.exercise.cases) ids.insert(spec.id);
  std::vector<CaseRun> runs;
  for (auto& request : subject.kit->plan(20261122)) {
    if (ids.count(request.string("case"))) runs.push_back({request, {}, {}, {}});
  }
  return runs;
}

// A simulated learner's answers to every planned case: `answer` gives the
// outputs of a forward case (empty: it cannot run it).
JudgeInput simulate(Subject& subject, uint64_t seed, const std::function<kit::Tensors(const CaseRun&)>& answer) {
  JudgeInput input;
  input.seed = seed;
  for (auto& request : subject.kit->plan(seed)) {
    CaseRun run{request, {}, {}, {}};
    const auto kind = request.string_or("kind", "forward");
    if (kind == "construct") {
      run.thrown = "refused (simulated)";  // a correct constructor refuses
    } else if (kind == "fit") {
      run.thrown = "training is not simulated";
    } else {
      auto outputs = answer(run);
      if (outputs.empty()) run.thrown = "this case cannot be simulated";
      for (auto& [name, tensor] : outputs) run.response.tensors[name] = tensor;
    }
    input.cases[request.string("case")] = run;
  }
  return input;
}

Problems has_parts(const fs::path& root, const std::string& id) {
  Problems problems;
  const auto exercise = load_exercise(root / "exercises" / id);
  const auto need = [&](const fs::path& path, const std::string& what) {
    if (!fs::exists(path)) problems.push_back(what + " missing: " + fs::relative(path, root).string());
  };
  need(exercise.dir / "README.md", "statement");
  need(exercise.dir / kQuestionsFile, "follow-up questions");
  need(root / "grader" / "checks" / id / "checks.cpp", "check code");
  need(root / "grader" / "checks" / id / "driver.cpp", "driver");
  for (const auto& file : exercise.learner_files) {
    need(exercise.dir / file, "starter");
    need(exercise.dir / ".starter" / file, "starter copy for grade reset");
    need(root / "solutions" / id / file, "model solution");
  }
  if (corpus_files(root, id, "accepted").size() < 3) problems.push_back("fewer than 3 accepted styles in the corpus");
  if (corpus_files(root, id, "wrong").size() < 8) problems.push_back("fewer than 8 wrong submissions in the corpus");
  for (const auto& file : corpus_files(root, id, "wrong")) {
    auto label = label_of(file);
    // Or, where no evidence ties its failure to a concept, says so (unexplained: true).
    const bool unexplained = label && label["unexplained"] && label["unexplained"].as<bool>();
    if (!(label && label["missed"] && (label["missed"].size() > 0 || unexplained))) {
      problems.push_back(file.filename().string() +
                         ": a wrong submission is labelled with the focus points it misses (or unexplained: true)");
    }
  }
  return problems;
}

// README.md's table of exercises has its row, naming its learner file (its
// place in the learning order is exercise_test's to check).
Problems listed_in_readme(const fs::path& root, const std::string& id) {
  const auto exercise = load_exercise(root / "exercises" / id);
  std::ifstream readme(root / "README.md");
  const std::string start = "| `" + id + "` |";
  for (std::string line; std::getline(readme, line);) {
    if (line.rfind(start, 0) != 0) continue;
    if (line.find("exercises/" + id + "/" + exercise.learner_files.front()) == std::string::npos) {
      return {"README.md's row of " + id + " does not name its learner file exercises/" + id + "/" +
              exercise.learner_files.front()};
    }
    return {};
  }
  return {"README.md's table of exercises has no row " + start + " (in the learning order, with what is built "
          "and the learner's file)"};
}

Problems focus_points_covered(const fs::path& root, const std::string& id) {
  Problems problems;
  const auto exercise = load_exercise(root / "exercises" / id);
  std::set<std::string> missed;
  auto files = corpus_files(root, id, "wrong");
  for (const auto& file : corpus_files(root, id, "hostile")) files.push_back(file);
  for (const auto& file : files) {
    for (const auto& point : label_of(file)["missed"]) {
      auto name = point.as<std::string>();
      if (std::none_of(exercise.focus_points.begin(), exercise.focus_points.end(),
                       [&](const FocusPoint& p) { return p.id == name; })) {
        problems.push_back(file.filename().string() + " names an undeclared focus point '" + name + "'");
      }
      missed.insert(name);
    }
  }
  for (const auto& point : exercise.focus_points) {
    if (!missed.count(point.id)) {
      problems.push_back("no wrong submission is labelled as missing focus point '" + point.id +
                         "': the grader's ability to report it is untested");
    }
  }
  return problems;
}

Problems mistakes_covered(const fs::path& root, const std::string& id) {
  Problems problems;
  auto subject = load(root, id);
  const auto& exercise = subject.exercise;
  std::set<std::string> nameable(subject.kit->replayable().begin(), subject.kit->replayable().end());
  nameable.insert(subject.kit->named_by_checks().begin(), subject.kit->named_by_checks().end());
  for (const auto& feature : exercise.features) {
    if (!feature.mistake.empty()) nameable.insert(feature.mistake);
  }
  for (const auto& rule : exercise.error_rules) {
    if (!rule.mistake.empty()) nameable.insert(rule.mistake);
  }
  std::set<std::string> labelled;
  for (const auto& file : corpus_files(root, id, "wrong")) {
    auto label = label_of(file);
    if (!label["mistake"]) continue;
    auto name = label["mistake"].as<std::string>();
    if (std::none_of(exercise.mistakes.begin(), exercise.mistakes.end(),
                     [&](const Mistake& m) { return m.id == name; })) {
      problems.push_back(file.filename().string() + " names an undeclared mistake '" + name + "'");
    }
    labelled.insert(name);
  }
  for (const auto& mistake : exercise.mistakes) {
    if (!nameable.count(mistake.id)) {
      problems.push_back("mistake '" + mistake.id +
                         "' is neither replayed by the reference nor named by a check, a feature or an error rule: the "
                         "grader can never name it");
    }
    if (!labelled.count(mistake.id)) problems.push_back("no wrong submission is labelled with mistake '" + mistake.id + "'");
  }
  return problems;
}

// Two known mistakes that give the same result on a case (scaling by
// sqrt(Nq) is no scaling when Nq = 1) must give different results on another
// case, which the diagnosis uses to tell them apart; and each mistake shows
// (differs from the correct result) on at least one case.
Problems mistakes_distinguishable(const fs::path& root, const std::string& id) {
  Problems problems;
  auto subject = load(root, id);
  const auto& kit = *subject.kit;
  const auto runs = planned_cases(subject);
  if (runs.empty()) return {"no case of exercise.yaml is planned here"};
  std::map<std::string, int> shows;
  std::map<std::pair<std::string, std::string>, std::string> coincide;  // pair -> a case where they do
  std::set<std::pair<std::string, std::string>> separated;
  for (const auto& run : runs) {
    const auto& tolerance = subject.exercise.tolerance(run.request.string_or("dtype", "float64"));
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
    const auto correct = kit.expected(run);
    std::vector<std::pair<std::string, kit::Tensors>> replayed;
    for (const auto& mistake : kit.replayable()) {
      auto result = kit.expected(run, mistake);
      if (!result.empty()) replayed.emplace_back(mistake, std::move(result));
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
    if (!separated.count(pair)) {
      problems.push_back("mistakes '" + pair.first + "' and '" + pair.second +
                         "' give the same result on every case where both replay (e.g. " + where +
                         "): no case tells them apart");
    }
  }
  for (const auto& mistake : kit.replayable()) {
    if (shows[mistake] == 0) {
      problems.push_back("mistake '" + mistake +
                         "' gives the correct result on every case: it can never be replayed (add a case where it "
                         "shows)");
    }
  }
  return problems;
}

// Every replayable mistake, made exactly (a simulated learner answers each
// case with the reference bent by that mistake), is named as itself and as
// nothing else, and its focus point is reported missed.
Problems mistakes_named_alone(const fs::path& root, const std::string& id) {
  Problems problems;
  auto subject = load(root, id);
  auto& kit = *subject.kit;
  const auto& exercise = subject.exercise;
  std::string numerics_check;
  for (const auto& check : exercise.checks) {
    if (check.kind == "numerics" && numerics_check.empty()) numerics_check = check.id;
  }
  for (const auto& mistake : kit.replayable()) {
    const std::string who = "simulated mistake '" + mistake + "': ";
    auto input = simulate(subject, 20261122, [&](const CaseRun& run) {
      auto outputs = kit.expected(kit.data_of(run), mistake);
      // In the case's dtype; a narrow one crosses the channel as float64, as from the runner.
      const auto dtype = wire::floating_dtype(run.request.string_or("dtype", "float64"));
      const auto sent = dtype == at::kFloat ? at::kFloat : at::kDouble;
      for (auto& [name, tensor] : outputs) tensor = tensor.to(dtype).to(sent);
      return outputs;
    });
    std::set<std::string> named, missed;
    for (const auto& result : subject.suite->judge(input)) {
      if (!result.mistake.empty()) named.insert(result.mistake);
      if (result.status == CheckStatus::failed) missed.insert(result.focus_point);
    }
    // Explained from any case where it shows, it is the same mistake.
    for (const auto& spec : exercise.cases) {
      if (!kit::unsupported_dtype(spec.trait("dtype", "float64")).empty()) continue;  // not planned here
      if (kit.status(spec.id) != kit::CaseStatus::differs) continue;
      auto explained = kit.explain(numerics_check, spec.id);
      if (explained.mistake != mistake) {
        problems.push_back(who + "explained from " + input.at(spec.id).describe() + " as '" + explained.mistake +
                           "': " + explained.message);
      }
    }
    if (!named.count(mistake)) problems.push_back(who + "not named");
    for (const auto& other : named) {
      if (other != mistake) problems.push_back(who + "another mistake is named too: '" + other + "'");
    }
    const auto& focus = exercise.mistake(mistake).focus_point;
    if (!missed.count(focus)) problems.push_back(who + "its focus point '" + focus + "' is not reported missed");
  }
  return problems;
}

// A learner's output of another shape (0-dim, an empty last axis) in every
// case is a failed check and the grade goes on: never a grader fault, and never
// a pass (a fuzz over output shapes; the hostile corpus holds real files).
Problems odd_shapes_fail(const fs::path& root, const std::string& id) {
  Problems problems;
  auto subject = load(root, id);
  auto& kit = *subject.kit;
  const std::vector<std::pair<std::string, std::function<at::Tensor(const at::Tensor&)>>> odd = {
      {"0-dim", [](const at::Tensor& t) { return t.sum(); }},
      {"empty last axis", [](const at::Tensor& t) { return t.dim() > 0 ? t.narrow(-1, 0, 0) : t.reshape({1, 0}); }}};
  for (const auto& output : subject.exercise.signature.outputs) {
    for (const auto& [shape, bend] : odd) {
      const std::string who = "the output '" + output.name + "' " + shape + " in every case: ";
      auto input = simulate(subject, 20261126, [&](const CaseRun& run) {
        auto outputs = kit.expected(kit.data_of(run));
        for (auto& [name, tensor] : outputs) {
          if (name == output.name) tensor = bend(tensor);
        }
        return outputs;
      });
      try {
        const auto results = subject.suite->judge(input);
        if (std::none_of(results.begin(), results.end(),
                         [](const CheckResult& r) { return r.status == CheckStatus::failed; })) {
          problems.push_back(who + "no check fails");
        }
      } catch (const std::exception& error) {
        problems.push_back(who + "the grade throws: " + error.what());
      }
    }
  }
  return problems;
}

// The reference reads every parameter exercise.yaml declares and nothing
// else. (Whether the output depends on each is measured, not assumed: a key
// bias adds the same amount to every score of a query, which the softmax
// cancels; see the kit's `dependence` kind.)
Problems reference_reads_declared(const fs::path& root, const std::string& id) {
  Problems problems;
  auto subject = load(root, id);
  const auto& kit = *subject.kit;
  const auto runs = planned_cases(subject);
  if (runs.empty()) return {"no case of exercise.yaml is planned here"};
  auto data = kit.data_of(runs.front());
  std::set<std::string> declared;
  for (const auto& param : kit::parameters_of(subject.exercise.signature.parameters, data.dims)) {
    declared.insert(param.name);
  }
  if (keys_of(data.params) != std::vector<std::string>(declared.begin(), declared.end())) {
    problems.push_back("the planned parameters are not exactly the declared ones");
  }
  kit::Tensors base;
  try {
    base = kit.expected(data);
  } catch (const std::exception& error) {
    return {"the reference fails with exactly the declared parameters: " + std::string(error.what())};
  }
  if (base.empty()) return {"the reference gives no outputs on " + runs.front().describe()};
  for (const auto& name : declared) {
    auto without = data;
    without.params.erase(name);
    bool threw = false;
    try {
      (void)kit.expected(without);
    } catch (const std::exception&) {
      threw = true;
    }
    if (!threw) problems.push_back("the reference never reads declared parameter '" + name + "'");
  }
  return problems;
}

// Promises every statement makes, each exercised (issue 47): float64 cases
// judged at float64 precision (unless a table the constructor builds in the
// default dtype, a registered buffer, sets the precision), and a module run
// as its constructor left it, with no .to(dtype).
Problems contract_exercised(const fs::path& root, const std::string& id) {
  Problems problems;
  const auto exercise = load_exercise(root / "exercises" / id);
  if (exercise.gpu_only()) return problems;
  const bool float64_cases = std::any_of(exercise.cases.begin(), exercise.cases.end(), [](const CaseSpec& spec) {
    return spec.trait("dtype", "float64") == "float64";
  });
  const bool buffer_table = std::any_of(exercise.checks.begin(), exercise.checks.end(), [](const CheckSpec& check) {
    return check.kind == "registered_buffer" || !check.option("buffers").empty();
  });
  if (float64_cases && !buffer_table && exercise.tolerance("exact").rtol > 1e-8) {
    problems.push_back("float64 cases pass at a tolerance float32 arithmetic meets: give tolerances.exact at float64 "
                       "precision (rtol <= 1e-8)");
  }
  const bool module = !exercise.signature.constructor.empty() || !exercise.signature.parameters.empty();
  const bool as_built = std::any_of(exercise.cases.begin(), exercise.cases.end(), [](const CaseSpec& spec) {
    return spec.trait("module", "converted") == "as_built";
  });
  if (module && !as_built) {
    problems.push_back("no case runs the module as its constructor left it (module: as_built): the output's dtype is "
                       "only checked after .to(dtype)");
  }
  return problems;
}

}  // namespace

std::vector<fs::path> corpus_files(const fs::path& root, const std::string& id, const std::string& kind) {
  std::vector<fs::path> files;
  auto dir = root / "tests" / "submissions" / id / kind;
  if (!fs::is_directory(dir)) return files;
  for (const auto& item : fs::directory_iterator(dir)) {
    if (item.path().extension() == ".cpp" || item.path().extension() == ".cu") files.push_back(item.path());
  }
  std::sort(files.begin(), files.end());
  return files;
}

const std::vector<VerifyRule>& verify_rules() {
  static const std::vector<VerifyRule> rules = {
      {"has_parts",
       "statement, questions, check code, starter and its copy, model solution, at least 3 accepted and 8 wrong "
       "submissions, each wrong one labelled",
       has_parts},
      {"listed_in_readme", "README.md's table of exercises has its row, naming its learner file", listed_in_readme},
      {"focus_points_covered", "every focus point is labelled missed by some wrong or hostile submission",
       focus_points_covered},
      {"mistakes_covered",
       "every known mistake can be named (replayed, named by the exercise's own checks, or by a feature or an error "
       "rule) and labels a wrong "
       "submission",
       mistakes_covered},
      {"mistakes_distinguishable", "each known mistake shows on some case, and some case tells any two apart",
       mistakes_distinguishable},
      {"mistakes_named_alone", "each known mistake made alone is named as itself, and its focus point missed",
       mistakes_named_alone},
      {"odd_shapes_fail", "an output of another shape fails a check and never faults the grader", odd_shapes_fail},
      {"reference_reads_declared", "the reference reads exactly the parameters exercise.yaml declares",
       reference_reads_declared},
      {"contract_exercised",
       "float64 cases judged at float64 precision (tolerances.exact), and a module run as built (module: as_built)",
       contract_exercised},
  };
  return rules;
}

const VerifyRule& verify_rule(const std::string& name) {
  for (const auto& rule : verify_rules()) {
    if (rule.name == name) return rule;
  }
  throw GraderFault("no verification rule '" + name + "'");
}

}  // namespace grader
