#include "checks/kit/kit.h"

#include <ATen/ATen.h>
#include <ATen/CPUGeneratorImpl.h>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <torch/version.h>

#include <algorithm>
#include <chrono>
#include <cctype>
#include <cmath>
#include <functional>
#include <limits>
#include <set>
#include <sstream>

#include "checks/kit/helpers.h"
#include "base/errors.h"
#include "report/report.h"

namespace grader::kit {

Kit::RoundingMeasure Kit::measure_rounding(const CaseRun& run, const Tensors& reference, const Tensors& learner) const {
  RoundingMeasure measure;
  for (const auto& [name, want] : reference) {
    if (auto got = learner.find(name); got != learner.end() && got->second.sizes() == want.sizes())
      measure.deviation = std::max(measure.deviation, (got->second.to(at::kDouble) - want).abs().max().item<double>());
  }
  measure.rounding = float32_rounding(run, reference);
  return measure;
}

bool Kit::rounding_explains(const CaseRun& run) const {
  if (status(run.request.string("case")) != CaseStatus::precision || !findings().empty()) return false;
  const auto reference = expected(run);
  Tensors learner;
  for (const auto& [name, want] : reference) {
    std::string why;
    if (auto got = learner_tensor(run, name, why)) learner[name] = *got;
  }
  return measure_rounding(run, reference, learner).explains();
}

std::optional<std::string> Kit::misshapen_output() const {
  for (const auto& spec : cases_) {
    const auto& run = input_->at(spec.id);
    if (not_runnable(run)) continue;
    for (const auto& output : exercise_.signature.outputs) {
      std::string why;
      auto tensor = learner_tensor(run, output.name, why);
      if (!tensor) continue;
      const auto want = shape_of(output, spec.dims);
      if (tensor->sizes() != at::IntArrayRef(want)) {
        return "your output '" + output.name + "' has shape " + shape_string(tensor->sizes()) + " on " +
               run.describe() + ", expected " + shape_string(want) + " (see the shape checks)";
      }
    }
  }
  return std::nullopt;
}

std::optional<double> Kit::float32_rounding(const CaseRun& run, const Tensors& exact) const {
  try {
    auto data = data_of(run);
    for (auto* tensors : {&data.inputs, &data.params}) {
      for (auto& [name, tensor] : *tensors) {
        if (tensor.scalar_type() == at::kDouble) tensor = tensor.to(at::kFloat);
      }
    }
    const auto rounded = expected(data);
    double largest = 0;
    for (const auto& [name, want] : exact) {
      auto got = rounded.find(name);
      if (got == rounded.end()) return std::nullopt;
      largest = std::max(largest, (got->second.to(at::kDouble) - want).abs().max().item<double>());
    }
    return largest > 0 ? std::optional<double>(largest) : std::nullopt;
  } catch (const c10::Error&) {
    return std::nullopt;  // the reference does not run in float32 here: no claim either way
  }
}

std::optional<bool> Kit::replay_matches(const CaseRun& run, const Tensors& outputs,
                                        const std::vector<std::string>& mistakes) const {
  auto replayed = expected(run, mistakes);
  if (replayed.empty()) return std::nullopt;
  const auto& tolerance = exercise_.tolerance(run.request.string_or("dtype", "float64"));
  for (const auto& [name, tensor] : replayed) {
    auto got = outputs.find(name);
    if (got == outputs.end() || !compare(tensor, got->second, tolerance).ok) return false;
  }
  return true;
}

bool Kit::explains_every_case(const std::string& mistake) const {
  return explains_every_case(std::vector<std::string>{mistake});
}

bool Kit::explains_every_case(const std::vector<std::string>& mistakes) const {
  // Asked by every explanation of a grade (explain_precision) and by
  // mark_consequences: computed once per grade and set of mistakes.
  if (auto known = explains_.find(mistakes); known != explains_.end()) return known->second;
  return explains_[mistakes] = replays_every_case(mistakes);
}

bool Kit::replays_every_case(const std::vector<std::string>& mistakes) const {
  for (const auto& mistake : mistakes) {
    if (std::find(replayable_.begin(), replayable_.end(), mistake) == replayable_.end()) return false;
  }
  size_t compared = 0;
  for (const auto& spec : cases_) {
    const auto s = status(spec.id);
    if (s == CaseStatus::threw || s == CaseStatus::unusable) continue;
    const auto& run = input_->at(spec.id);
    const auto matched = replay_matches(run, learner_outputs(run), mistakes);
    if (matched == false) return false;
    compared += matched.has_value();  // not replayable there: says nothing
  }
  return compared > 0;
}

void Kit::mark_consequences(std::vector<CheckResult>& results) const {
  auto set_aside = [](CheckResult& result, const std::string& why) {
    result.blames_focus = false;
    result.message += " (" + why + ")";
  };
  auto blames = [](const CheckResult& r) { return r.status == CheckStatus::failed && r.blames_focus; };
  // Parameters other than the statement's (a bias it does not have, a wrong
  // shape): every other difference may follow from them.
  for (size_t i = 0; i < results.size() && i < exercise_.checks.size(); ++i) {
    if (exercise_.checks[i].kind != "parameters" || !blames(results[i])) continue;
    const auto focus = results[i].focus_point;
    for (auto& other : results) {
      if (blames(other) && other.focus_point != focus) {
        set_aside(other, "your module's parameters differ from the statement's (see " + results[i].id +
                             "), which can cause this too: fix them first");
      }
    }
    return;
  }
  // Batch elements that mix mean a reshape or a layout lost the batch axis
  // (the reference never mixes them): an error thrown further on (a mask the
  // size of the batch the code believes it has) can follow from that, so the
  // error's rule names nothing and the dependence speaks.
  for (size_t i = 0; i < results.size() && i < exercise_.checks.size(); ++i) {
    if (exercise_.checks[i].kind != "dependence" || !blames(results[i]) || !batch_elements_mix(exercise_.checks[i]))
      continue;
    for (auto& other : results) {
      if (blames(other) && other.from_error && other.focus_point != results[i].focus_point) {
        set_aside(other, "your output mixes batch elements (see " + results[i].id +
                             "), and a layout that loses the batch axis makes this error too: fix that first");
      }
    }
  }
  // An input dependence is a symptom: where a check of another kind names a
  // focus point, the dependence it causes names none of its own (nor do the
  // results explained by it).
  std::set<std::string> named;
  std::set<std::string> dependence_ids;
  for (size_t i = 0; i < results.size() && i < exercise_.checks.size(); ++i) {
    if (exercise_.checks[i].kind == "dependence") {
      dependence_ids.insert(results[i].id);
    } else if (blames(results[i]) && results[i].explained_by.empty()) {
      named.insert(results[i].focus_point);
    }
  }
  for (auto& result : results) {
    if (!blames(result) || named.empty() || named.count(result.focus_point)) continue;
    const bool symptom = dependence_ids.count(result.id) > 0 || dependence_ids.count(result.explained_by) > 0;
    if (symptom) set_aside(result, "a dependence another mistake found here can cause: fix that first");
  }
  // A mistake named by a check judged alone (on its own measurement, or for
  // the learner's own forward) is a second one: it explains nothing else.
  auto alone = [&](size_t i) { return i < exercise_.checks.size() && exercise_.checks[i].option("judged_alone") == "true"; };
  // The known mistakes named (one, or a pair replayed together): where their
  // replay gives every case, the failures of other focus points follow from them.
  std::set<std::string> mistakes;
  for (size_t i = 0; i < results.size(); ++i) {
    const auto& result = results[i];
    if (result.status != CheckStatus::failed || result.mistake.empty() || alone(i)) continue;
    mistakes.insert(result.mistake);
    mistakes.insert(result.also_mistakes.begin(), result.also_mistakes.end());
  }
  if (mistakes.empty() || mistakes.size() > 2) return;
  if (!explains_every_case(std::vector<std::string>(mistakes.begin(), mistakes.end()))) return;
  std::set<std::string> focus_points;
  std::string titles;
  for (const auto& id : mistakes) {
    const auto& mistake = exercise_.mistake(id);
    focus_points.insert(mistake.focus_point);
    titles += (titles.empty() ? "\"" : "\" and \"") + mistake.title;
  }
  titles += "\"";
  const bool one = mistakes.size() == 1;
  for (size_t i = 0; i < results.size(); ++i) {
    auto& result = results[i];
    if (!blames(result) || !result.mistake.empty() || focus_points.count(result.focus_point)) continue;
    // A check judged on the learner's own outputs alone (`judged_alone`: a
    // training run against the same code's eval run) reads its focus point
    // whatever the mistake elsewhere: a second mistake, named too.
    if (alone(i)) continue;
    // Its own reading of the results assumed the rest was right: what it
    // would say (no mask, a factor of -inf) may be false, so it says only this.
    result.blames_focus = false;
    result.message = one ? "fails as the known mistake " + titles +
                               " makes it fail (your results on every case are that mistake's): fix it first"
                         : "fails as the known mistakes " + titles +
                               " together make it fail (your results on every case are theirs): fix them first";
  }
}

std::optional<CheckResult> Kit::explain_error(const std::string& check, const CaseRun& run) const {
  if (auto mismatch = device_mismatch(run.error()); mismatch && has_focus_point("device_placement")) {
    auto result = results_.fail(check, "tensors on different devices met in " + *mismatch +
                                           ": a tensor of yours stays on the CPU while the input is on the GPU; "
                                           "create tensors with the input's options (x.options(), x.device()) and "
                                           "register constant ones as buffers");
    result.focus_point = "device_placement";
    result.evidence = {"your code threw on " + run.describe() + ": " + first_line(run.error())};
    run.add_thrown_at(result.evidence);
    return result;
  }
  for (const auto& rule : exercise_.error_rules) {
    if (run.error().find(rule.contains) == std::string::npos) continue;
    CheckResult result =
        rule.mistake.empty() ? results_.fail(check, rule.says) : results_.fail_with_mistake(check, rule.mistake, {});
    if (!rule.mistake.empty()) result.message = rule.says;
    result.focus_point = rule.focus_point;
    result.evidence = {"your code threw on " + run.describe() + ": " + first_line(run.error())};
    run.add_thrown_at(result.evidence);
    result.from_error = true;
    return result;
  }
  return std::nullopt;
}

// How two configurations differ: "mask none -> padding, Nq 5 -> 3".
std::vector<std::string> case_differences(const CaseSpec& from, const CaseSpec& to) {
  std::vector<std::string> out;
  std::set<std::string> names;
  for (const auto& [name, value] : from.dims) names.insert(name);
  for (const auto& [name, value] : to.dims) names.insert(name);
  for (const auto& name : names) {
    auto a = from.dims.find(name), b = to.dims.find(name);
    if (a == from.dims.end() || b == to.dims.end() || a->second != b->second) {
      out.push_back(name + " " + (a == from.dims.end() ? "-" : std::to_string(a->second)) + " -> " +
                    (b == to.dims.end() ? "-" : std::to_string(b->second)));
    }
  }
  names.clear();
  for (const auto& [name, value] : from.traits) names.insert(name);
  for (const auto& [name, value] : to.traits) names.insert(name);
  for (const auto& name : names) {
    const auto a = from.trait(name, name == "dtype" ? "float64" : name == "mode" ? "eval" : "none");
    const auto b = to.trait(name, name == "dtype" ? "float64" : name == "mode" ? "eval" : "none");
    if (a != b) out.push_back(name + " " + a + " -> " + b);
  }
  return out;
}

std::optional<std::string> Kit::nearest_passing(const std::string& failing_id) const {
  const auto failing =
      std::find_if(cases_.begin(), cases_.end(), [&](const CaseSpec& c) { return c.id == failing_id; });
  if (failing == cases_.end()) return std::nullopt;
  std::optional<std::string> best;
  size_t fewest = 0;
  for (const auto& spec : cases_) {
    if (status(spec.id) != CaseStatus::matches) continue;
    const auto differences = case_differences(*failing, spec);
    if (differences.empty()) continue;
    if (!best || differences.size() < fewest) {
      fewest = differences.size();
      best = fmt::format("the nearest configuration that passes: {} (it differs in {})", input_->at(spec.id).describe(),
                         fmt::join(differences, ", "));
    }
  }
  return best;
}

std::string Kit::smallest_failing(const std::string& check) const {
  // Among the check's own cases where one fails (a smaller failing case of
  // another check may fail for another reason), else among all.
  const auto ids = cases_of(exercise_.check(check));
  const std::set<std::string> own(ids.begin(), ids.end());
  bool own_fails = false;
  for (const auto& id : own) own_fails |= status(id) == CaseStatus::differs || status(id) == CaseStatus::threw;
  std::string best;
  int64_t best_size = -1;
  for (const auto& spec : cases_) {
    if (own_fails && !own.count(spec.id)) continue;
    auto s = status(spec.id);
    if (s != CaseStatus::differs && s != CaseStatus::threw) continue;
    const auto size = case_size(spec);
    if (best_size < 0 || size < best_size) {
      best_size = size;
      best = spec.id;
    }
  }
  return best;
}

std::optional<CheckResult> Kit::attribute_to_feature(const std::string& check) const {
  std::set<std::string> failing, all;
  for (const auto& spec : cases_) {
    auto s = status(spec.id);
    // A case that matches only loosely neither passes nor fails: with one,
    // "fails exactly where the feature holds" cannot be told.
    if (s == CaseStatus::unusable || s == CaseStatus::precision) return std::nullopt;
    all.insert(spec.id);
    if (s == CaseStatus::differs || s == CaseStatus::threw) failing.insert(spec.id);
  }
  if (failing.empty() || failing == all) return std::nullopt;
  for (const auto& feature : exercise_.features) {
    std::set<std::string> having;
    for (const auto& spec : cases_) {
      if (feature_holds(feature.when, spec)) having.insert(spec.id);
    }
    if (having != failing) continue;
    std::vector<std::string> evidence;
    for (const auto& spec : cases_) {
      const auto& run = input_->at(spec.id);
      const bool fails = failing.count(spec.id) > 0;
      evidence.push_back((fails ? "fails:  " : "passes: ") + run.describe() +
                         (fails && run.threw() ? " (threw: " + first_line(run.error()) + ")" : ""));
    }
    auto result =
        feature.mistake.empty() ? results_.fail(check, "") : results_.fail_with_mistake(check, feature.mistake, {});
    result.message = "your code fails exactly on the configurations where " + feature.when + ": " + feature.says;
    result.focus_point = feature.focus_point;
    result.evidence = evidence;
    return result;
  }
  return std::nullopt;
}

std::vector<std::string> Kit::replayed_mistakes(const std::string& case_id, const Tensors& learner) const {
  using Mistakes = std::vector<std::string>;
  // Candidates that match this case; the other cases refute those whose
  // replay differs from the learner's output there (scaling by sqrt(Nq) is no
  // scaling when Nq = 1). A lone candidate is refuted only by a case the
  // learner also got wrong: a mistake made on one code path (a fast path for
  // one head, for one token) leaves the other cases right, but a case wrong
  // in another way shows the mistake is not the learner's.
  // A candidate must match here. Two mistakes together must also match on
  // some case where their replay has a finite value: NaN matching NaN alone
  // (an output that is all NaN) would let many a pair "explain" it. A single
  // mistake's NaN for NaN (the overflow of a softmax without its maximum
  // subtracted) stays evidence: the other cases can refute it.
  auto informative = [&](const CaseRun& run, const Mistakes& m) {
    for (const auto& [name, tensor] : expected(run, m)) {
      if (!tensor.is_floating_point() || at::isfinite(tensor).any().item<bool>()) return true;
    }
    return false;
  };
  auto supported = [&](const Mistakes& m) {
    const auto& here = input_->at(case_id);
    if (replay_matches(here, learner, m) != true) return false;
    if (m.size() == 1 || informative(here, m)) return true;
    for (const auto& spec : cases_) {
      if (spec.id == case_id) continue;
      const auto s = status(spec.id);
      if (s != CaseStatus::differs && s != CaseStatus::precision) continue;
      const auto& run = input_->at(spec.id);
      const auto outputs = learner_outputs(run);
      if (outputs.size() != exercise_.signature.outputs.size()) continue;
      if (informative(run, m) && replay_matches(run, outputs, m) == true) return true;
    }
    return false;
  };
  auto narrowed = [&](std::vector<Mistakes> candidates) {
    candidates.erase(std::remove_if(candidates.begin(), candidates.end(),
                                    [&](const Mistakes& m) { return !supported(m); }),
                     candidates.end());
    for (const auto& spec : cases_) {
      if (spec.id == case_id || candidates.empty()) continue;
      const auto s = status(spec.id);
      if (s == CaseStatus::threw || s == CaseStatus::unusable) continue;
      if (candidates.size() == 1 && s == CaseStatus::matches) continue;
      const auto& run = input_->at(spec.id);
      const auto outputs = learner_outputs(run);
      if (outputs.size() != exercise_.signature.outputs.size()) continue;
      candidates.erase(std::remove_if(candidates.begin(), candidates.end(),
                                      [&](const Mistakes& m) { return replay_matches(run, outputs, m) == false; }),
                       candidates.end());
    }
    return candidates;
  };
  std::vector<Mistakes> singles, pairs;
  for (const auto& mistake : exercise_.mistakes) {
    if (std::find(replayable_.begin(), replayable_.end(), mistake.id) != replayable_.end())
      singles.push_back({mistake.id});
  }
  auto found = narrowed(singles);
  if (found.size() == 1) return found.front();
  if (!found.empty()) return {};  // ambiguous: the probes and features speak instead
  // Two mistakes at once: of two focus points, or two halves of one (heads
  // split without the transpose and merged back without it).
  for (size_t i = 0; i < singles.size(); ++i) {
    for (size_t j = i + 1; j < singles.size(); ++j) pairs.push_back({singles[i][0], singles[j][0]});
  }
  found = narrowed(pairs);
  return found.size() == 1 ? found.front() : Mistakes{};
}

// A difference of the size float32 rounding makes (measured: the reference
// run in float32) in a float64 case: float32 work in a float64 call.
std::optional<CheckResult> Kit::explain_precision(const std::string& check, const CaseRun& run, const Tensors& reference,
                                                  const Tensors& learner, std::vector<std::string>& evidence) const {
  if (status(run.request.string("case")) != CaseStatus::precision || !findings().empty()) return std::nullopt;
  // A known mistake whose replay gives every case's results is a better
  // reading than rounding (on some case their difference is larger than
  // rounding): explain_by_mistakes names it.
  for (const auto& mistake : replayable_) {
    if (explains_every_case(mistake)) return std::nullopt;
  }
  // Measured, not guessed: the reference computed in float32 shows how far
  // float32 rounding moves these results. Only a deviation of that size is
  // called a precision problem; a larger one is a different formula.
  const auto measure = measure_rounding(run, reference, learner);
  if (measure.explains()) {
    evidence.insert(evidence.end() - 1, fmt::format("largest difference {:.3g}; the reference computed in float32 "
                                                    "differs from its float64 result by up to {:.3g}",
                                                    measure.deviation, *measure.rounding));
    auto result = results_.fail(check,
                                "your results have float32 precision in a float64 check (differences of the size "
                                "float32 rounding makes): is a tensor or a constant computed in float32?",
                                evidence);
    if (has_focus_point("numerics")) result.focus_point = "numerics";
    return result;
  }
  if (measure.rounding) {
    evidence.insert(evidence.end() - 1, fmt::format("largest difference {:.3g}, more than float32 rounding makes "
                                                    "here (up to {:.3g}): not a precision problem",
                                                    measure.deviation, *measure.rounding));
  }
  return std::nullopt;
}

std::optional<CheckResult> Kit::explain_unloaded(const std::string& check, const CaseRun& run,
                                                 const std::vector<std::string>& evidence) const {
  // Parameters the signature does not name for this case are never loaded:
  // they keep their random initial values, and no replay can match.
  std::set<std::string> named;
  for (const auto& param : parameters_of(exercise_.signature.parameters, data_of(run).dims)) named.insert(param.name);
  std::vector<std::string> unloaded;
  for (const auto& param : module_parameters(run)) {
    if (!named.count(param.name)) unloaded.push_back(param.name);
  }
  if (exercise_.signature.parameters.empty() || unloaded.empty()) return std::nullopt;
  {
    std::string constructor;
    for (const auto& [name, value] : run.request.ints) {
      if (const auto argument = wire::key::ctor_name(name))
        constructor += (constructor.empty() ? "" : ", ") + *argument + " = " + std::to_string(value);
    }
    std::string list;
    for (size_t i = 0; i < unloaded.size() && i < 4; ++i) list += (i ? ", " : "") + unloaded[i];
    if (unloaded.size() > 4) list += fmt::format(" and {} more", unloaded.size() - 4);
    auto result = results_.fail(check,
                                "constructed with " + constructor +
                                    ", your module registers parameters the statement "
                                    "does not have for these arguments (" +
                                    list +
                                    "): the grader cannot load them, so "
                                    "they keep random values; does the constructor use every argument?",
                                evidence);
    for (const auto& spec : exercise_.checks) {
      if (spec.kind == "parameters") result.focus_point = spec.focus_point;
    }
    return result;
  }
}

// One known mistake, or two together, that replay the learner's results.
std::optional<CheckResult> Kit::explain_by_mistakes(const std::string& check, const std::string& case_id,
                                                    const Tensors& learner, const std::vector<std::string>& evidence) const {
  const auto mistakes = replayed_mistakes(case_id, learner);
  if (mistakes.size() == 1) return results_.fail_with_mistake(check, mistakes[0], evidence);
  if (mistakes.size() == 2) {
    const auto &first = exercise_.mistake(mistakes[0]), &second = exercise_.mistake(mistakes[1]);
    auto result = results_.fail_with_mistake(check, first.id, evidence);
    auto clause = [](const Mistake& m) {
      auto why = m.explanation;
      if (!why.empty() && why.back() == '.') why.pop_back();
      return m.title + " (" + why + ")";
    };
    result.message =
        "two known mistakes together reproduce your results exactly: " + clause(first) + "; and " + clause(second);
    result.also_against = {second.focus_point};
    result.also_mistakes = {second.id};
    return result;
  }
  return std::nullopt;
}

// NaN or infinity where the reference is finite: a part switched off by
// zero weights does not silence a NaN (0 * NaN is NaN), so the isolation
// twins cannot place it; say what is known instead.
std::optional<CheckResult> Kit::explain_non_finite(const std::string& check, const CaseRun& run, const Tensors& reference,
                                                   const Tensors& learner, std::vector<std::string> evidence) const {
  for (const auto& [name, want] : reference) {
    const auto& got = learner.at(name);
    if (!got.is_floating_point() || got.sizes() != want.sizes()) continue;
    const auto bad = at::logical_and(at::isfinite(got).logical_not(), at::isfinite(want));
    const auto count = bad.sum().item<int64_t>();
    if (count == 0) continue;
    auto first = bad.nonzero()[0];
    std::string index;
    for (int64_t i = 0; i < first.size(0); ++i) index += (i ? ", " : "") + std::to_string(first[i].item<int64_t>());
    evidence.insert(evidence.end() - 1, fmt::format("{}: {} of {} values are NaN or infinite where the reference's are "
                                                    "finite, the first at ({})",
                                                    name, count, got.numel(), index));
    auto result = results_.fail(
        check,
        "unexplained: your " + name +
            " has NaN or infinite values where the reference's are finite; look for a row of scores masked "
            "entirely (-inf everywhere gives NaN after softmax), 0 * inf, or a division by zero; start from the "
            "smallest configuration that fails: " +
            (smallest_failing(check).empty() ? run.describe() : input_->at(smallest_failing(check)).describe()),
        evidence);
    result.blames_focus = false;
    return result;
  }
  return std::nullopt;
}

CheckResult Kit::explain(const std::string& check, const std::string& case_id) const {
  const auto& run = input_->at(case_id);
  const auto s = status(case_id);
  if (s == CaseStatus::threw) {
    if (auto ruled = explain_error(check, run)) return *ruled;
    if (auto featured = attribute_to_feature(check)) return *featured;
    return results_.threw(check, run);
  }
  if (auto why = not_runnable(run)) return results_.skip(check, "not assessed: " + *why);

  const auto dtype = run.request.string_or("dtype", "float64");
  const auto& tolerance = exercise_.tolerance(dtype == "float64" ? "exact" : dtype);
  std::vector<std::string> evidence = {"input: " + run.describe()};
  Tensors learner;
  const auto reference = expected(run);
  for (const auto& [name, want] : reference) {
    std::string why;
    auto got = learner_tensor(run, name, why);
    if (!got) return results_.fail(check, why + " (" + run.describe() + ")");
    learner[name] = *got;
    auto cmp = compare(want, *got, tolerance);
    if (!cmp.ok) evidence.push_back(name + ": " + cmp.detail);
  }
  evidence.push_back(input_->replay_hint());
  // (Where a measurement found a mistake, a slight difference is more likely
  // its effect than float32's: the measurement speaks, below.)
  if (auto result = explain_precision(check, run, reference, learner, evidence)) return *result;
  if (auto result = explain_unloaded(check, run, evidence)) return *result;
  if (auto result = explain_by_mistakes(check, case_id, learner, evidence)) return *result;
  for (const auto& finding : findings()) {
    evidence.pop_back();  // the replay hint, said once at the end
    auto result = results_.fail(check, "explained by a measurement (" + finding.id + "): " + finding.message, evidence);
    result.focus_point = finding.focus_point;
    result.explained_by = finding.id;
    for (const auto& line : finding.evidence) {
      if (line != input_->replay_hint()) result.evidence.push_back(line);
    }
    result.evidence.push_back(input_->replay_hint());
    return result;
  }
  if (auto featured = attribute_to_feature(check)) {
    featured->evidence.insert(featured->evidence.begin(), evidence.begin(), evidence.end() - 1);
    return *featured;
  }
  if (auto result = explain_non_finite(check, run, reference, learner, evidence)) return *result;
  // Placed by the isolation twins (of the smallest failing case, else of this
  // one, else of another of the check's cases that has twins and fails);
  // where they tie it to no focus point, the dropout twins may (a difference
  // in what the first Dropout drops: the embedding).
  std::optional<CheckResult> isolated;
  std::vector<std::string> bases = {smallest_failing(check), case_id};
  for (const auto& id : cases_of(exercise_.check(check))) bases.push_back(id);
  for (const auto& base : bases) {
    if (!base.empty() && !isolated) isolated = isolate(check, base, evidence);
  }
  if (isolated && isolated->blames_focus) return *isolated;
  if (auto localised = localise(check, evidence); localised && (localised->blames_focus || !isolated)) return *localised;
  if (isolated) return *isolated;
  // Unexplained: no focus point is named as the cause (those this check
  // covers are left not established, never missed by guess).
  const auto smallest = smallest_failing(check);
  if (auto pair = nearest_passing(smallest.empty() ? case_id : smallest)) evidence.insert(evidence.end() - 1, *pair);
  auto result = results_.fail(check,
                              "unexplained: the results differ from the reference, and neither a known mistake nor "
                              "the grader's measurements explain how; start from the smallest configuration that "
                              "fails: " +
                                  (smallest.empty() ? run.describe() : input_->at(smallest).describe()),
                              evidence);
  result.blames_focus = false;
  return result;
}

// Where an unexplained difference lies, from the dropout_sites check's
// twins: each drops one part of the module (its Dropout at p = 1, training
// mode, the others at 0). Where the eval result differs and a twin matches
// the reference with that part dropped, the difference lies inside that part
// (the narrowest such part, in the order of `names`), and its `point.<site>`
// is named. Where none matches, `evidence` says so and nothing is named.
std::optional<CheckResult> Kit::localise(const std::string& check, std::vector<std::string>& evidence) const {
  const auto spec = std::find_if(exercise_.checks.begin(), exercise_.checks.end(), [](const CheckSpec& c) {
    return c.kind == "dropout_sites" && !c.option("names").empty();
  });
  if (spec == exercise_.checks.end()) return std::nullopt;
  const auto& base = spec->cases.front();
  const auto& eval = input_->at(base);
  if (not_runnable(eval) || status(base) == CaseStatus::matches) return std::nullopt;
  const auto& name = exercise_.signature.outputs.front().name;
  const auto& tolerance = exercise_.tolerance(eval.request.string_or("dtype", "float64"));
  const auto sites = option_list(*spec, "names", "dropout");
  for (const auto& site : sites) {
    const auto& run = input_->at(dropout_site_case(base, site));
    std::string why;
    if (not_runnable(run) || run.response.strings.count("dropout_p_missing")) return std::nullopt;
    auto got = learner_tensor(run, name, why);
    if (!got || !compare(expected(run).at(name), *got, tolerance).ok) continue;
    const auto where = spec->option("at." + site, site + "'s place");
    auto result = results_.fail(
        check,
        "the difference lies in what " + site + " drops, " + where + ": with it dropped (" + site +
            " at p = 1 in "
            "training mode, the other Dropouts at 0) your results match the reference's, so the rest is right on this "
            "input; what differs there is no mistake the grader knows",
        evidence);
    result.evidence.insert(result.evidence.end() - 1,
                           fmt::format("{}: differs from the reference in eval mode; {}: matches the reference with "
                                       "{} dropped",
                                       eval.describe(), run.describe(), where));
    const auto point = spec->option("point." + site);
    if (!point.empty() && has_focus_point(point)) {
      result.focus_point = point;
    } else {
      result.blames_focus = false;
    }
    return result;
  }
  evidence.insert(
      evidence.end() - 1,
      fmt::format("{}, run again in training mode with each of {} at p = 1 in turn (the others at 0): it still "
                  "differs from the reference with that place dropped, so the difference lies in what "
                  "every one of them leaves, or in more than one place",
                  eval.describe(), fmt::join(sites, ", ")));
  return std::nullopt;
}

}  // namespace grader::kit
