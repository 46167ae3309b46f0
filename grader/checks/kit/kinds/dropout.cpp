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

CheckResult Kit::dropouts(const CheckSpec& spec) const {
  const auto& run = input_->at(cases_of(spec).front());
  if (!run.response.ints.count("constructed")) return results_.threw(spec.id, run);
  const auto argument = spec.option("argument", "dropout");
  if (!run.request.reals.count(wire::key::ctor(argument))) {
    throw ConfigError("check '" + spec.id + "': the constructor has no argument '" + argument + "'");
  }
  const double p = run.request.reals.at(wire::key::ctor(argument));
  // The names, each template expanded ("layers.{L}.dropout").
  std::vector<TensorSpec> names;
  for (const auto& name : option_list(spec, "names", "dropout")) names.push_back(TensorSpec{name, {}, "randn", ""});
  std::vector<std::string> wrong;
  std::string listed;
  for (const auto& name : parameters_of(names, data_of(run).dims)) {
    listed += (listed.empty() ? "" : ", ") + name.name;
    auto found = registered_dropout(run, name.name);
    if (!found) {
      wrong.push_back("no Dropout registered as '" + name.name + "'");
    } else if (std::abs(*found - p) > 1e-12) {
      wrong.push_back(fmt::format("'{}' has p = {}", name.name, *found));
    }
  }
  if (wrong.empty()) return results_.pass(spec.id, listed + ": registered with the constructor's p");
  wrong.insert(wrong.begin(), fmt::format("constructed with {} = {}", argument, p));
  return results_.fail(spec.id,
                       "every Dropout module (" + listed +
                           ") must be registered under its name with the "
                           "constructor's " +
                           argument + " as p",
                       wrong);
}

CheckResult Kit::dropout_in_training(const CheckSpec& spec) const {
  const auto id = cases_of(spec).front();
  const auto& eval = input_->at(id);
  const auto& a = input_->at(training_case(id, 0));
  const auto& b = input_->at(training_case(id, 1));
  for (const auto* run : {&a, &b, &eval}) {
    if (auto why = not_runnable(*run)) return results_.skip(spec.id, "not assessed: " + *why);
  }
  const auto& name = exercise_.signature.outputs.front().name;
  std::string why;
  auto first = learner_tensor(a, name, why), second = learner_tensor(b, name, why);
  auto plain = learner_tensor(eval, name, why);
  if (!first || !second || !plain) return results_.skip(spec.id, "not assessed: " + why);
  if (first->sizes() != plain->sizes() || second->sizes() != plain->sizes()) {
    return results_.skip(spec.id, "not assessed: the " + name + " has shape " + shape_string(first->sizes()));
  }
  // Anything dropped moves the result by far more than rounding.
  auto moved = [](const at::Tensor& x, const at::Tensor& y) {
    return (x.to(at::kDouble) - y.to(at::kDouble)).abs().max().item<double>();
  };
  if (moved(*first, *plain) < 1e-9 || moved(*first, *second) < 1e-9) {
    return results_.fail(
        spec.id,
        "in training mode no dropout acts: call the registered Dropout modules in forward (they "
        "are the identity in eval mode, and only there)",
        {"input: " + a.describe(), fmt::format("training vs eval: max difference {:.3g}; two training runs: {:.3g}",
                                               moved(*first, *plain), moved(*first, *second))});
  }
  return results_.pass(spec.id, "dropout acts in training mode: two runs differ, and differ from eval mode");
}

// Each Dropout's place, measured: in training mode with one Dropout at p = 1
// and the others at 0 the block is deterministic, and equals the reference
// with that place zeroed; with all at 0 it equals eval mode. Judged only
// where eval mode matches the reference (else any difference could be the
// block's, not its dropouts').
CheckResult Kit::dropout_sites(const CheckSpec& spec) const {
  const auto& id = spec.cases.front();
  const auto paths = option_list(spec, "names", "dropout");
  const auto& eval = input_->at(id);
  if (auto why = not_runnable(eval)) return results_.skip(spec.id, "not assessed: " + *why);
  if (status(id) != CaseStatus::matches) {
    return results_.skip(spec.id, "not assessed: in eval mode your results differ from the reference (" +
                                      eval.describe() +
                                      "; see the numerics checks), so where the dropouts act "
                                      "cannot be told from the rest");
  }
  const auto& name = exercise_.signature.outputs.front().name;
  const auto& tolerance = exercise_.tolerance(eval.request.string_or("dtype", "float64"));
  const auto all = fmt::format("{}", fmt::join(paths, ", "));
  // Judges one twin: nothing when it matches the reference with its place zeroed.
  auto judge_twin = [&](const std::string& site) -> std::optional<CheckResult> {
    const auto& run = input_->at(dropout_site_case(id, site));
    if (auto why = not_runnable(run)) return results_.skip(spec.id, "not assessed: " + *why);
    const auto missing = listed_names(run, "dropout_p_missing");
    if (!missing.empty()) {
      return results_.skip(spec.id, "not assessed: " + fmt::format("{}", fmt::join(missing, ", ")) +
                                        " is no registered Dropout (see the check of the registered dropouts)");
    }
    std::string why;
    auto got = learner_tensor(run, name, why);
    if (!got) return results_.skip(spec.id, "not assessed: " + why);
    const auto want = expected(run);
    auto cmp = compare(want.at(name), *got, tolerance);
    if (cmp.ok) return std::nullopt;
    std::vector<std::string> evidence = {"input: " + run.describe(), name + ": " + cmp.detail};
    if (paths.empty()) {
      return results_.fail(spec.id,
                           "in training mode your output differs from eval mode's on the same input: the statement "
                           "has no dropout here (nor anything else that depends on the mode); remove it",
                           evidence);
    }
    if (site.empty()) {
      return results_.fail(spec.id,
                           "with every registered Dropout at p = 0 (" + all +
                               "), training mode still changes your "
                               "output: a dropout the statement does not have acts (MultiheadAttention's own dropout "
                               "option, which the statement leaves at 0, or a functional dropout with a stored p)",
                           evidence);
    }
    const auto where = spec.option("at." + site, "its place in the statement");
    const auto unchanged = compare(expected(eval).at(name), *got, tolerance);
    if (unchanged.ok) {
      return results_.fail(spec.id,
                           site +
                               " never acts: with its p set to 1 (the other Dropouts at 0) your output is what "
                               "it is without dropout. Call " +
                               site + " in forward, on " + where,
                           evidence);
    }
    return results_.fail(spec.id,
                         "with " + site +
                             " at p = 1 (the other Dropouts at 0) your output is not the reference's "
                             "when only " +
                             where + " is dropped: " + site + " acts somewhere else. Apply it to " + where,
                         evidence);
  };
  if (auto result = judge_twin("")) return *result;
  for (const auto& site : paths) {
    if (auto result = judge_twin(site)) return *result;
  }
  if (paths.empty()) return results_.pass(spec.id, "training mode gives what eval mode gives (no dropout here)");
  if (paths.size() == 1) {
    return results_.pass(spec.id, all +
                                      " acts at its place (set to p = 1 in training mode, any other Dropout at 0), "
                                      "and at 0 training mode changes nothing");
  }
  return results_.pass(spec.id, "each of " + all +
                                    " acts at its place (set to p = 1 one at a time in training "
                                    "mode), and with all at 0 training mode changes nothing");
}

}  // namespace grader::kit
