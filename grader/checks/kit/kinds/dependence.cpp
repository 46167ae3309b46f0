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

std::vector<wire::Record> Kit::moved_twins(const CaseSpec& spec, const wire::Record& record,
                                           at::Generator& generator) const {
  const auto& sig = exercise_.signature;
  std::vector<wire::Record> twins;
  auto twin_of = [&](const std::string& what, const std::string& says) {
    auto twin = record;
    twin.strings["case"] = moved_case(spec.id, what);
    twin.strings["describe"] += ", " + says;
    twin.tensors.erase("grad_output");
    return twin;
  };
  auto redraw_as = [&](const TensorSpec& what, const at::Tensor& t) {
    if (what.kind == "tokens") return at::randint(evaluate_dim(what.below, spec.dims), t.sizes(), generator, at::kLong);
    return (at::randn(t.sizes(), generator, at::kDouble) * t.to(at::kDouble).std().clamp_min(0.1)).to(t.scalar_type());
  };
  auto redraw = [&](const at::Tensor& t) { return redraw_as(TensorSpec{}, t); };
  for (const auto& input : sig.inputs) {
    if (input.kind == "attention_mask") continue;
    auto twin = twin_of(input.name, input.name + " redrawn");
    auto& tensor = twin.tensors[wire::key::input(input.name)];
    tensor = redraw_as(input, tensor);
    twins.push_back(std::move(twin));
  }
  for (const auto& param : parameters_of(sig.parameters, spec.dims)) {
    auto twin = twin_of(param.name, param.name + " redrawn");
    auto& tensor = twin.tensors[wire::key::param(param.name)];
    tensor = redraw(tensor);
    twins.push_back(std::move(twin));
  }
  // Batch elements are independent problems: redraw all but the first.
  bool batched = spec.dims.count("B") && spec.dims.at("B") > 1;
  for (const auto& t : sig.inputs) batched &= !t.shape.empty() && t.shape.front() == "B";
  for (const auto& t : sig.outputs) batched &= !t.shape.empty() && t.shape.front() == "B";
  if (batched) {
    auto twin = twin_of("batch", "batch elements 1.. redrawn");
    for (const auto& input : sig.inputs) {
      if (input.kind == "attention_mask") continue;
      auto& tensor = twin.tensors[wire::key::input(input.name)];
      auto others = tensor.narrow(0, 1, tensor.size(0) - 1);
      tensor = at::cat({tensor.narrow(0, 0, 1), redraw_as(input, others)}, 0);
    }
    twins.push_back(std::move(twin));
  }
  return twins;
}

namespace {

// Largest change between two sets of outputs (of batch element 0 only, with
// `first_element_only`) beyond `tolerance`; 0 if none, nothing where the
// shapes differ.
std::optional<double> moved_by(const Tensors& before, const Tensors& after, bool first_element_only,
                               const Tolerance& tolerance) {
  double most = 0;
  bool moves = false;
  for (const auto& [name, tensor] : before) {
    auto found = after.find(name);
    if (found == after.end()) return std::nullopt;
    auto b = first_element_only ? tensor.narrow(0, 0, 1) : tensor;
    auto a = first_element_only ? found->second.narrow(0, 0, 1) : found->second;
    if (a.sizes() != b.sizes()) return std::nullopt;
    moves |= !compare(b, a, tolerance).ok;
    most = std::max(most, (a.to(at::kDouble) - b.to(at::kDouble)).abs().max().item<double>());
  }
  return moves ? most : 0.0;
}

}  // namespace

bool Kit::batch_elements_mix(const CheckSpec& spec) const {
  const auto id = cases_of(spec).front();
  const auto& base = input_->at(id);
  auto twin = input_->cases.find(moved_case(id, "batch"));
  if (twin == input_->cases.end() || not_runnable(base) || not_runnable(twin->second)) return false;
  const auto& tolerance = exercise_.tolerance(base.request.string_or("dtype", "float64"));
  const auto before = learner_outputs(base), after = learner_outputs(twin->second);
  if (before.size() != exercise_.signature.outputs.size() || after.size() != before.size()) return false;
  const auto learner = moved_by(before, after, true, tolerance);
  const auto reference = moved_by(expected(base), expected(twin->second), true, tolerance);
  return learner && reference && *learner > 0 && *reference == 0;
}

CheckResult Kit::dependence(const CheckSpec& spec) const {
  const auto id = cases_of(spec).front();
  const auto& base = input_->at(id);
  for (const auto* run : {&base, &input_->at(repeat_case(id))}) {
    if (not_runnable(*run)) return results_.skip(spec.id, "not assessed: " + *not_runnable(*run));
  }
  const auto& tolerance = exercise_.tolerance(base.request.string_or("dtype", "float64"));
  auto learner_of = [&](const CaseRun& run) {
    Tensors outputs = learner_outputs(run);
    return outputs.size() == exercise_.signature.outputs.size() ? outputs : Tensors{};
  };
  auto moved = [&](const Tensors& before, const Tensors& after, bool first_element_only) {
    return moved_by(before, after, first_element_only, tolerance);
  };
  const auto learner_base = learner_of(base);
  if (learner_base.empty()) return results_.skip(spec.id, "not assessed: no usable output on " + base.describe());
  for (const auto& [name, tensor] : learner_base) {
    if (tensor.is_floating_point() && at::isnan(tensor).any().item<bool>()) {
      return results_.skip(spec.id, "not assessed: your " + name + " has NaN values on " + base.describe() +
                                        ", so what moves it cannot be measured (see the other checks)");
    }
  }
  if (auto again = moved(learner_base, learner_of(input_->at(repeat_case(id))), false); !again || *again > 0) {
    return results_.skip(spec.id,
                         "not assessed: your output changes between two runs on identical inputs "
                         "(something random runs in forward), so what it depends on cannot be isolated");
  }
  const auto reference_base = expected(base);
  std::vector<std::string> ignored, spurious, evidence;
  std::map<std::string, double> ignored_moves;  // how far each ignored one moved the reference
  std::string focus;
  auto focus_of = [&](const std::string& what) {
    for (std::string key = what;; key = key.substr(0, key.rfind('.'))) {
      auto given = spec.option("focus." + key);
      if (!given.empty()) return given;
      if (key.find('.') == std::string::npos) return spec.focus_point;
    }
  };
  std::vector<std::string> names;
  for (const auto& input : exercise_.signature.inputs) {
    if (input.kind != "attention_mask") names.push_back(input.name);
  }
  const auto parameters = parameters_of(exercise_.signature.parameters, data_of(base).dims);
  for (const auto& param : parameters) names.push_back(param.name);
  names.push_back("batch");
  for (const auto& what : names) {
    auto found = input_->cases.find(moved_case(id, what));
    if (found == input_->cases.end() || not_runnable(found->second)) continue;
    const bool batch = what == "batch";
    auto learner_after = learner_of(found->second);
    if (learner_after.empty()) continue;
    auto learner_moves = moved(learner_base, learner_after, batch);
    auto reference_moves = moved(reference_base, expected(found->second), batch);
    if (!learner_moves || !reference_moves) continue;
    const bool should = *reference_moves > 0, does = *learner_moves > 0;
    if (should == does) continue;
    if (focus.empty()) focus = focus_of(what);
    if (batch) {
      spurious.push_back("the other batch elements (keep the batch axis first through every reshape)");
      evidence.push_back("redrawing batch elements 1.. moved batch element 0's output by up to " +
                         fmt::format("{:.3g}", *learner_moves) + " (the reference's does not move)");
    } else if (should) {
      ignored.push_back(what);
      ignored_moves[what] = *reference_moves;
    } else {
      spurious.push_back(what);
      evidence.push_back("redrawing " + what + " moved your output by up to " + fmt::format("{:.3g}", *learner_moves) +
                         " (the reference's does not move)");
    }
  }
  if (ignored.empty() && spurious.empty()) {
    return results_.pass(spec.id, "the output depends on exactly what the reference's depends on");
  }
  // Ignored parameters that are every parameter of one sub-module of a stack
  // ("layers.0.…") are said once, as that module.
  std::map<std::string, std::vector<std::string>> by_module, declared;
  auto module_of = [](const std::string& name) {
    const auto first = name.find('.');
    const auto second = first == std::string::npos ? std::string::npos : name.find('.', first + 1);
    return second == std::string::npos ? std::string() : name.substr(0, second);
  };
  for (const auto& name : ignored) by_module[module_of(name)].push_back(name);
  for (const auto& param : parameters) declared[module_of(param.name)].push_back(param.name);
  std::vector<std::string> said;
  std::vector<std::string> ignored_evidence;
  for (const auto& name : ignored) {
    const auto module = module_of(name);
    const auto& group = by_module[module];
    if (!module.empty() && group.size() >= 4 && group.size() == declared[module].size()) {
      if (group.front() != name) continue;  // said once, at its first name
      double most = 0;
      for (const auto& member : group) most = std::max(most, ignored_moves[member]);
      said.push_back(fmt::format("any of the {} weights of {}", group.size(), module));
      ignored_evidence.push_back(
          fmt::format("redrawing each of {}'s {} weights moved the reference's output (by up "
                      "to {:.3g}), yours not at all",
                      module, group.size(), most));
      continue;
    }
    said.push_back(name);
    ignored_evidence.push_back("redrawing " + name + " moved the reference's output by up to " +
                               fmt::format("{:.3g}", ignored_moves[name]) + ", yours not at all");
  }
  evidence.insert(evidence.begin(), ignored_evidence.begin(), ignored_evidence.end());
  ignored = said;
  auto list = [](const std::vector<std::string>& items) {
    std::string text;
    for (size_t i = 0; i < items.size(); ++i) text += (i ? (i + 1 == items.size() ? " and " : ", ") : "") + items[i];
    return text;
  };
  std::string message;
  if (!ignored.empty()) message = "your output does not depend on " + list(ignored) + ", the reference's does";
  if (!spurious.empty()) {
    message += std::string(message.empty() ? "your output" : "; and it") + " depends on " + list(spurious) +
               ", the reference's does not";
  }
  evidence.insert(evidence.begin(), "input: " + base.describe());
  evidence.push_back(input_->replay_hint());
  auto result = results_.fail(spec.id, message, evidence);
  result.focus_point = focus;
  return result;
}

}  // namespace grader::kit
