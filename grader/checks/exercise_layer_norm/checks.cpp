// Parent side of exercise_layer_norm: the reference (reference/norm_reference.h)
// with its replayable forward mistakes; the hand-written backward judged one
// gradient at a time, its classic mistakes replayed; and the affine step
// (scale, then shift, per feature) measured on a probe. The rest is
// exercise.yaml and the kit.
#include <ATen/ATen.h>
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "checks/kit/kit.h"
#include "norm_reference.h"

namespace grader::exercise_layer_norm {
namespace {

using reference::Norm;
using reference::NormVariant;
using Bend = std::function<void(NormVariant&)>;

// Each replayable mistake: the norm it belongs to (none: both), and how it
// bends the reference.
struct Replay {
  std::optional<Norm> only;
  Bend bend;
};

const std::map<std::string, Replay>& forward_replays() {
  static const std::map<std::string, Replay> table = {
      {"unbiased_variance", {Norm::layer, [](auto& v) { v.unbiased_variance = true; }}},
      {"eps_outside_sqrt", {std::nullopt, [](auto& v) { v.eps_outside_sqrt = true; }}},
      {"rms_centred", {Norm::rms, [](auto& v) { v.rms_centred = true; }}},
      {"rms_sum_of_squares", {Norm::rms, [](auto& v) { v.rms_sum_of_squares = true; }}},
  };
  return table;
}

// The backward's mistakes, for both norms unless named for one.
const std::map<std::string, std::function<void(NormVariant&)>>& backward_bends() {
  static const std::map<std::string, std::function<void(NormVariant&)>> table = {
      {"backward_no_mean_term", [](auto& v) { v.no_mean_term = true; }},
      {"backward_no_variance_term", [](auto& v) { v.no_variance_term = true; }},
      {"param_grads_averaged", [](auto& v) { v.param_grads_averaged = true; }},
  };
  return table;
}

Norm norm_of(const kit::Dims& dims) { return dims.at("R") != 0 ? Norm::rms : Norm::layer; }
double eps_of(const kit::Dims& dims) { return std::pow(10.0, -static_cast<double>(dims.at("E"))); }
const char* name_of(Norm norm) { return norm == Norm::rms ? "RMSNorm" : "LayerNorm"; }

at::Tensor bias_of(const kit::CaseData& data) {
  return norm_of(data.dims) == Norm::layer ? data.inputs.at("bias") : at::Tensor();
}

kit::Tensors reference_of(const kit::CaseData& data, const std::vector<std::string>& mistakes) {
  const auto norm = norm_of(data.dims);
  NormVariant variant;
  for (const auto& mistake : mistakes) {
    const auto& replay = forward_replays().at(mistake);
    if (replay.only && *replay.only != norm) return {};  // the other norm's mistake: not replayable here
    replay.bend(variant);
  }
  return {{"output", reference::norm_forward(norm, data.inputs.at("x"), data.inputs.at("weight"), bias_of(data),
                                              eps_of(data.dims), variant)}};
}

std::vector<std::string> replayable() {
  std::vector<std::string> ids;
  for (const auto& [id, replay] : forward_replays()) ids.push_back(id);
  return ids;
}

// Every case says which norm it runs and its eps, not only R and E.
void name_the_norm(kit::Kit& kit, std::vector<wire::Record>& cases, at::Generator&) {
  (void)kit;
  for (auto& record : cases) {
    const auto rms = record.integer_or(wire::key::dim("R"), -1), e = record.integer_or(wire::key::dim("E"), -1);
    if (rms < 0 || e < 0) continue;
    record.strings["describe"] += fmt::format(" ({}, eps 1e-{})", rms != 0 ? "RMSNorm" : "LayerNorm", e);
  }
}

// ---- the backward, by hand ----------------------------------------------

// The gradients a check judges: dL/dx (option gradient: x), or the
// parameters' (gradient: parameters; the bias's for LayerNorm only).
std::vector<std::string> judged_gradients(const CheckSpec& spec, Norm norm) {
  if (spec.option("gradient") == "x") return {"x"};
  if (norm == Norm::layer) return {"weight", "bias"};
  return {"weight"};
}

at::Tensor gradient_named(const reference::NormGradients& grads, const std::string& name) {
  return name == "x" ? grads.x : name == "weight" ? grads.weight : grads.bias;
}

const char* symbol_of(const std::string& name) {
  return name == "x" ? "dL/dx" : name == "weight" ? "dL/dweight" : "dL/dbias";
}

// Whether the replay of `mistake` gives the learner's forward output on `run`
// (float64 cases only; nullopt where it cannot be compared).
std::optional<bool> replay_gives(const kit::Kit& kit, const CaseRun& run, const std::string& mistake) {
  if (run.request.string_or("dtype", "float64") != "float64" || kit.not_runnable(run)) return std::nullopt;
  std::string why;
  const auto output = learner_tensor(run, "output", why);
  const auto bent = kit.expected(run, mistake);
  if (!output || !bent.count("output")) return std::nullopt;
  return bent.at("output").sizes() == output->sizes() &&
         compare(bent.at("output"), output->to(at::kDouble), kit.exercise().tolerance("float64")).ok;
}

// The known forward mistake whose replay gives the learner's forward output
// on `run` and on every float64 case of exercise.yaml for the same norm (the
// eps = 0.1 ones among them): a forward that only rounds differently, near a
// mistake that barely moves one case, is refuted by another.
std::optional<std::string> replayed_forward(const kit::Kit& kit, const CaseRun& run) {
  const auto norm = norm_of(kit.data_of(run).dims);
  for (const auto& [mistake, replay] : forward_replays()) {
    if (replay_gives(kit, run, mistake) != true) continue;
    bool refuted = false;
    for (const auto& spec : kit.exercise().cases) {
      if (!kit.input().cases.count(spec.id)) continue;
      const auto& other = kit.input().at(spec.id);
      if (norm_of(kit.data_of(other).dims) == norm && replay_gives(kit, other, mistake) == false) refuted = true;
    }
    if (!refuted) return mistake;
  }
  return std::nullopt;
}

// The backward on one case of the check: nullopt where it gives the
// reference's gradients (those of the learner's forward where it replays a
// known mistake: `bent_forward` then names it).
std::optional<CheckResult> backward_on(const kit::Kit& kit, const CheckSpec& spec, const std::string& id,
                                       std::optional<std::string>& bent_forward) {
  const auto& results = kit.results();
  const auto& run = kit.input().at(id);
  if (kit.not_runnable(run)) return kit.explain(spec.id, id);
  NormVariant base;
  std::vector<std::string> evidence = {"input: " + run.describe()};
  // The backward of a different forward says nothing of this one's dL/dx. The
  // parameter gradients of a forward that is the reference's with one known
  // mistake are that forward's exactly (sum of dL/dy, and of dL/dy times its
  // normalised input), so they are judged for it: a second, independent
  // mistake there is named beside the forward's.
  if (kit.status(id) != kit::CaseStatus::matches) {
    auto mistake = spec.option("gradient") == "parameters" ? replayed_forward(kit, run) : std::nullopt;
    if (!mistake) {
      return results.skip(spec.id, "not assessed: the forward results are wrong for this input (" + run.describe() +
                                       "), so its backward cannot be judged; fix the forward first");
    }
    forward_replays().at(*mistake).bend(base);
    bent_forward = mistake;
    evidence.push_back("your forward is the reference's with the known mistake \"" + kit.exercise().mistake(*mistake).title +
                       "\" here, so the parameter gradients are judged as that forward's");
  }
  const auto data = kit.data_of(run);
  const auto norm = norm_of(data.dims);
  const auto& x = data.inputs.at("x");
  const auto& weight = data.inputs.at("weight");
  const auto& grad_output = run.request.tensor("grad_output");
  const auto want = reference::norm_backward(norm, x, weight, bias_of(data), eps_of(data.dims), grad_output, base);
  const auto& tolerance = kit.exercise().tolerance("exact");
  const auto& replayed = kit.exercise().tolerance("float64");
  std::map<std::string, at::Tensor> got;
  bool all_match = true;
  for (const auto& name : judged_gradients(spec, norm)) {
    std::string why;
    auto tensor = learner_tensor(run, wire::key::grad_input(name), why);
    if (!tensor) {
      return results.fail(spec.id,
                          std::string("your ") + name_of(norm) + "'s backward returned no " + symbol_of(name) +
                              ": return one gradient per input of forward, in its order (an undefined tensor "
                              "only for eps)",
                          {"input: " + run.describe(), why});
    }
    got[name] = tensor->to(at::kDouble);
    const auto cmp = compare(gradient_named(want, name), got[name], tolerance);
    if (!cmp.ok) {
      all_match = false;
      evidence.push_back(std::string(symbol_of(name)) + ": " + cmp.detail);
    }
  }
  if (all_match) return std::nullopt;
  // A classic mistake whose replay gives every judged gradient exactly.
  for (const auto& [mistake, bend] : backward_bends()) {
    if (norm == Norm::rms && mistake == "backward_no_mean_term") continue;  // RMSNorm has no mean path
    const auto known = std::find_if(kit.exercise().mistakes.begin(), kit.exercise().mistakes.end(),
                                    [&](const Mistake& m) { return m.id == mistake; });
    if (known == kit.exercise().mistakes.end() || known->focus_point != spec.focus_point) continue;
    NormVariant variant = base;
    bend(variant);
    const auto bent = reference::norm_backward(norm, x, weight, bias_of(data), eps_of(data.dims), grad_output, variant);
    bool matches = true;
    for (const auto& [name, tensor] : got) matches = matches && compare(gradient_named(bent, name), tensor, replayed).ok;
    if (matches) {
      evidence.push_back(fmt::format("the reference's backward with this mistake gives your {} exactly",
                                     got.size() == 1 ? "gradient" : "gradients"));
      evidence.push_back(kit.input().replay_hint());
      return results.fail_with_mistake(spec.id, mistake, evidence);
    }
  }
  evidence.push_back(kit.input().replay_hint());
  // The forward matched, so the difference is the backward's own.
  return results.fail(spec.id,
                      std::string("your ") + name_of(norm) + "'s backward gives " +
                          (spec.option("gradient") == "x" ? "a different dL/dx" : "different parameter gradients") +
                          " from the reference's although the forward matches: check the derivation (the "
                          "hints walk through it), and that no tensor saved for backward is modified in place "
                          "afterwards",
                      evidence);
}

CheckResult backward_by_hand(const kit::Kit& kit, const CheckSpec& spec) {
  std::optional<std::string> bent_forward;
  for (const auto& id : spec.cases) {
    if (auto failed = backward_on(kit, spec, id, bent_forward)) return *failed;
  }
  const auto norm = norm_of(kit.data_of(kit.input().at(spec.cases.at(0))).dims);
  const std::string ranks = spec.cases.size() > 1 ? " (x of every rank given)" : "";
  if (bent_forward) {
    return kit.results().pass(spec.id, std::string("your ") + name_of(norm) +
                                           "'s parameter gradients are those of your forward" + ranks +
                                           ", which has the mistake \"" + kit.exercise().mistake(*bent_forward).title +
                                           "\" (see its check)");
  }
  return kit.results().pass(spec.id, std::string("your ") + name_of(norm) + "'s backward gives the reference's gradients" +
                                         ranks);
}

// ---- the affine step, measured ------------------------------------------

// The probe: LayerNorm with weight_j = 1 + j/4 and bias_j = j/10 - 1/2, so
// each feature's scale and shift are distinct; each output column, fitted
// against the reference's normalised input, reads as scale * xhat + shift.
const char* const kAffineProbe = "affine_probe";

void add_affine_probe(kit::Kit& kit, std::vector<wire::Record>& cases, at::Generator&) {
  (void)kit;
  for (auto& record : cases) {
    if (record.string("case") != kAffineProbe) continue;
    const auto d = record.tensor(wire::key::input("weight")).size(0);
    auto j = at::arange(d, at::kDouble);
    record.tensors[wire::key::input("weight")] = 1 + j / 4;
    record.tensors[wire::key::input("bias")] = j / 10 - 0.5;
    record.strings["describe"] += ", weight_j = 1 + j/4 and bias_j = j/10 - 1/2";
  }
}

CheckResult affine_measured(const kit::Kit& kit, const CheckSpec& spec) {
  const auto& results = kit.results();
  const auto& run = kit.input().at(kAffineProbe);
  if (kit.not_runnable(run)) return results.skip(spec.id, "not measured: the probe did not run");
  std::string why;
  auto output = learner_tensor(run, "output", why);
  if (!output) return results.skip(spec.id, "not measured: " + why);
  const auto data = kit.data_of(run);
  const auto& x = data.inputs.at("x");
  const auto& weight = data.inputs.at("weight");
  const auto& bias = data.inputs.at("bias");
  if (output->sizes() != x.sizes()) return results.skip(spec.id, "not measured: the output has the wrong shape");
  const auto d = x.size(-1);
  auto y = output->to(at::kDouble).reshape({-1, d});
  auto xhat = reference::norm_forward(Norm::layer, x, at::ones({d}, at::kDouble), at::zeros({d}, at::kDouble),
                                      eps_of(data.dims))
                  .reshape({-1, d});
  // Per feature: y = scale * xhat + shift, by least squares over the positions.
  auto xm = xhat.mean(0), ym = y.mean(0);
  auto scale = ((xhat - xm) * (y - ym)).sum(0) / (xhat - xm).pow(2).sum(0);
  auto shift = ym - scale * xm;
  auto residual = (y - (scale * xhat + shift)).abs().max().item<double>();
  const auto& tolerance = kit.exercise().tolerance("float64");
  if (!std::isfinite(residual) || residual > 1e-6) {
    return results.skip(spec.id, "not measured: your output is not an affine function of the normalised input per "
                                 "feature (the statistics differ; the forward checks say how)");
  }
  const bool scale_ok = compare(weight, scale, tolerance).ok, shift_ok = compare(bias, shift, tolerance).ok;
  if (scale_ok && shift_ok) return results.pass(spec.id, "each feature is scaled by its weight, then shifted by its bias");
  auto list = [](const at::Tensor& t) {
    std::string text;
    for (int64_t i = 0; i < t.size(0) && i < 4; ++i) text += fmt::format("{}{:.4g}", i ? ", " : "", t[i].item<double>());
    return text + (t.size(0) > 4 ? ", ..." : "");
  };
  std::vector<std::string> evidence = {
      "input: " + run.describe(),
      "measured per feature, y = scale * xhat + shift: scale " + list(scale) + "; shift " + list(shift),
      "expected: scale = weight " + list(weight) + "; shift = bias " + list(bias)};
  std::string message;
  if (compare(bias, scale, tolerance).ok && compare(weight, shift, tolerance).ok) {
    message = "weight and bias are swapped: y = xhat * weight + bias";
  } else if (scale_ok && compare(bias * weight, shift, tolerance).ok) {
    message = "the bias is added before the scale ((xhat + bias) * weight): scale first, then shift";
  } else if (scale_ok) {
    message = "each feature is scaled by its weight, but shifted by something else than its bias";
  } else if (shift_ok) {
    message = "each feature is shifted by its bias, but scaled by something else than its weight";
  } else {
    message = "neither the scale nor the shift is the feature's weight and bias: y = xhat * weight + bias";
  }
  return results.fail(spec.id, message, evidence);
}

// ---- the statistics, measured -------------------------------------------

// The probe: LayerNorm with weight 1 and bias 0, each row (position) drawn
// with its own offset and spread, so the output's rows show over which axis
// the learner normalised: over the features each row has mean 0 and the
// variance var / (var + eps).
const char* const kStatisticsProbe = "statistics_probe";

void add_statistics_probe(kit::Kit& kit, std::vector<wire::Record>& cases, at::Generator& generator) {
  (void)kit;
  for (auto& record : cases) {
    if (record.string("case") != kStatisticsProbe) continue;
    const auto& x = record.tensor(wire::key::input("x"));
    const auto d = x.size(-1);
    auto offsets = at::randn({x.size(0), x.size(1), 1}, generator, at::kDouble) * 3;
    auto spreads = at::rand({x.size(0), x.size(1), 1}, generator, at::kDouble) * 2 + 0.5;
    record.tensors[wire::key::input("x")] = x * spreads + offsets;
    record.tensors[wire::key::input("weight")] = at::ones({d}, at::kDouble);
    record.tensors[wire::key::input("bias")] = at::zeros({d}, at::kDouble);
    record.strings["describe"] += ", weight 1 and bias 0, each position with its own offset and spread";
  }
}

CheckResult statistics_measured(const kit::Kit& kit, const CheckSpec& spec) {
  const auto& results = kit.results();
  const auto& run = kit.input().at(kStatisticsProbe);
  if (kit.not_runnable(run)) return results.skip(spec.id, "not measured: the probe did not run");
  std::string why;
  auto output = learner_tensor(run, "output", why);
  if (!output) return results.skip(spec.id, "not measured: " + why);
  const auto data = kit.data_of(run);
  const auto& x = data.inputs.at("x");
  if (output->sizes() != x.sizes()) return results.skip(spec.id, "not measured: the output has the wrong shape");
  auto y = output->to(at::kDouble);
  auto row_means = y.mean(-1).abs().max().item<double>();
  auto want = reference::norm_forward(Norm::layer, x, data.inputs.at("weight"), data.inputs.at("bias"), eps_of(data.dims));
  const auto& tolerance = kit.exercise().tolerance("float64");
  if (compare(want, y, tolerance).ok) return results.pass(spec.id, "each position is normalised over its features");
  std::vector<std::string> evidence = {"input: " + run.describe()};
  if (!std::isfinite(row_means)) return results.skip(spec.id, "not measured: your output is not finite");
  evidence.push_back(fmt::format("largest |mean| of an output row over the last dimension: {:.3g} (0 expected)", row_means));
  // Rows centred over the features: the statistics' axis is right, the rest is
  // another check's to say (the variance's divisor and eps are replayed).
  if (row_means < 1e-6) return results.skip(spec.id, "not measured: the rows are centred over the features; the difference is elsewhere");
  for (int64_t axis : {0, 1}) {
    if (y.mean(axis).abs().max().item<double>() < 1e-6) {
      evidence.push_back(fmt::format("the output has mean 0 over dimension {} instead", axis));
      return results.fail(spec.id,
                          std::string("your output is normalised over the ") + (axis == 0 ? "batch" : "positions") +
                              " (dimension " + std::to_string(axis) +
                              "), not over each position's features (the last dimension)",
                          evidence);
    }
  }
  // Not centred over the features, nor over another axis: no axis to name
  // (a weight or bias misapplied changes the rows' means too).
  return results.skip(spec.id, "not measured: the output rows are centred over no axis; the difference is elsewhere");
}

}  // namespace

std::unique_ptr<Suite> make_suite(const Exercise& exercise) {
  auto suite = std::make_unique<kit::Kit>(exercise, reference_of, replayable());
  suite->extra_cases(add_affine_probe);
  suite->extra_cases(name_the_norm);
  suite->extra_cases(add_statistics_probe);
  suite->measurement("statistics_measured", statistics_measured);
  suite->backward_check("backward_by_hand", backward_by_hand);
  std::vector<std::string> backward_mistakes;
  for (const auto& [id, bend] : backward_bends()) backward_mistakes.push_back(id);
  suite->names_mistakes(backward_mistakes);
  suite->measurement("affine_measured", affine_measured);
  return suite;
}

}  // namespace grader::exercise_layer_norm
