// Parent side of exercise_feed_forward: the reference with its replayable
// mistakes, and the checks no kit kind covers: the activation read off a
// probe, the dropout's probability and placement read off a training-mode
// probe, and positions permuted. Everything else is exercise.yaml and the kit.
#include <ATen/ATen.h>
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <map>

#include "checks/kit/kit.h"
#include "base/errors.h"
#include "ffn_reference.h"
#include "report/report.h"

namespace grader::exercise_feed_forward {
namespace {

using reference::Activation;
using reference::FeedForwardVariant;
using Bend = std::function<void(FeedForwardVariant&)>;

const std::map<std::string, Bend>& bends() {
  static const std::map<std::string, Bend> table = {
      {"relu", [](auto& v) { v.activation = Activation::relu; }},
      {"gelu_tanh", [](auto& v) { v.activation = Activation::gelu_tanh; }},
      {"silu", [](auto& v) { v.activation = Activation::silu; }},
      {"no_activation", [](auto& v) { v.activation = Activation::none; }},
      {"residual_inside", [](auto& v) { v.residual = true; }},
      {"layernorm_inside", [](auto& v) { v.normalised_output = true; }},
      {"add_and_norm_inside", [](auto& v) { v.residual = v.normalised_output = true; }},
  };
  return table;
}

kit::Tensors reference_of(const kit::CaseData& data, const std::vector<std::string>& mistakes) {
  if (data.train) return {};  // dropout is random: the probes below read it instead
  FeedForwardVariant variant;
  for (const auto& mistake : mistakes) bends().at(mistake)(variant);
  return {{"output", reference::feed_forward(data.inputs.at("x"), data.params, variant)}};
}

// Probes: linear1.weight = 0, so the hidden pre-activations are linear1.bias
// whatever x is; linear2 = the identity (d_ff = d_model), so each output
// channel is one hidden activation (plus linear2.bias).
constexpr int64_t kWidth = 64;
const char* const kActivationProbe = "activation_probe";
const char* const kDropoutProbe = "dropout_probe";
const char* const kDropoutProbeEval = "dropout_probe_eval";
// p = 0.37: a probability nobody hard-codes.
constexpr double kP = 0.37, kLinear2Bias = 0.5, kHidden = 1.0;

wire::Record probe_case(kit::Kit& kit, at::Generator& generator, const std::string& id, int64_t batch,
                        int64_t dropout_pct, const at::Tensor& hidden_bias, double output_bias) {
  CaseSpec spec{id, {{"B", batch}, {"N", 8}, {"D", kWidth}, {"F", kWidth}, {"dropout_pct", dropout_pct}}, {}};
  auto record = kit.make_case(spec, generator, 800001);
  // x = 0 as well: a residual added inside the sub-layer does not blur the reading.
  record.tensors[wire::key::input("x")] = at::zeros({batch, 8, kWidth}, at::kDouble);
  record.tensors[wire::key::param("linear1.weight")] = at::zeros({kWidth, kWidth}, at::kDouble);
  record.tensors[wire::key::param("linear1.bias")] = hidden_bias;
  record.tensors[wire::key::param("linear2.weight")] = at::eye(kWidth, at::kDouble);
  record.tensors[wire::key::param("linear2.bias")] = at::full({kWidth}, output_bias, at::kDouble);
  return record;
}

at::Tensor probe_points() { return at::linspace(-4, 4, kWidth, at::kDouble); }

void add_probes(kit::Kit& kit, std::vector<wire::Record>& cases, at::Generator& generator) {
  auto activation = probe_case(kit, generator, kActivationProbe, 1, 0, probe_points(), 0);
  activation.strings["describe"] += ", hidden pre-activations -4..4 read one per output channel";
  cases.push_back(activation);
  auto train =
      probe_case(kit, generator, kDropoutProbe, 16, 37, at::full({kWidth}, kHidden, at::kDouble), kLinear2Bias);
  train.ints["train"] = 1;
  train.strings["describe"] = fmt::format(
      "B=16 N=8 d_model=d_ff={} dropout 0.37, training mode, every hidden "
      "pre-activation {} and linear2 the identity plus {}",
      kWidth, kHidden, kLinear2Bias);
  auto eval = train;
  eval.strings["case"] = kDropoutProbeEval;
  eval.ints["train"] = 0;
  eval.ints["seed"] += 1;  // its own random stream: a dropout left on in eval mode draws another mask
  eval.strings["describe"] = train.strings["describe"] + " (the same in eval mode)";
  cases.push_back(train);
  cases.push_back(eval);
}

CheckResult activation_pattern(const kit::Kit& kit, const CheckSpec& spec) {
  const auto& results = kit.results();
  const auto& run = kit.input().at(kActivationProbe);
  if (auto why = kit.not_runnable(run)) return results.skip(spec.id, "not assessed: " + *why);
  std::string why;
  auto output = learner_tensor(run, "output", why);
  if (!output) return results.skip(spec.id, "not assessed: " + why);
  if (output->dim() != 3 || output->size(-1) != kWidth) {
    return results.skip(spec.id, "not assessed: the output has shape " + shape_string(output->sizes()) +
                                     " on the probe (see the shape check)");
  }
  auto got = output->to(at::kDouble)[0][0];
  const auto t = probe_points();
  auto sample = [&](const at::Tensor& values) {
    std::vector<std::string> out;
    for (int64_t i : {8, 24, 31, 40, 56}) {
      out.push_back(fmt::format("f({:.2f}) = {:.5f}", t[i].item<double>(), values[i].item<double>()));
    }
    return fmt::format("{}", fmt::join(out, ", "));
  };
  std::vector<std::string> evidence = {"input: " + run.describe(), "yours: " + sample(got)};
  const std::vector<std::pair<Activation, std::string>> known = {
      {Activation::gelu, "the exact GELU"},
      {Activation::gelu_tanh, "the tanh approximation of GELU"},
      {Activation::relu, "ReLU"},
      {Activation::silu, "SiLU (x * sigmoid(x))"},
      {Activation::none, "no activation (the identity)"}};
  for (const auto& [activation, name] : known) {
    if (!at::allclose(got, reference::activate(t, activation), 0, 1e-7)) continue;
    if (activation == Activation::gelu) return results.pass(spec.id, "the activation is the exact GELU");
    evidence.push_back("the exact GELU: " + sample(reference::activate(t, Activation::gelu)));
    std::string message = "the activation between the layers is " + name + ", not the exact GELU";
    if (activation == Activation::gelu_tanh) message += ": use torch::gelu with its default (approximate \"none\")";
    if (activation == Activation::none) message += ": two linear layers in a row are a single linear map";
    return results.fail(spec.id, message, evidence);
  }
  evidence.push_back("the exact GELU: " + sample(reference::activate(t, Activation::gelu)));
  return results.fail(spec.id,
                      "the activation between the layers is none the grader knows (exact GELU, its tanh form, ReLU, "
                      "SiLU, the identity): apply torch::gelu to linear1's output, and nothing else",
                      evidence);
}

CheckResult dropout_probability(const kit::Kit& kit, const CheckSpec& spec) {
  const auto& run = kit.input().at(kDropoutProbe);
  if (!run.response.ints.count("constructed")) return kit.results().threw(spec.id, run);
  auto p = kit::registered_dropout(run, "dropout");
  if (!p)
    return kit.results().fail(spec.id, "no Dropout is registered as 'dropout'", {"constructed with dropout=0.37"});
  if (std::abs(*p - kP) > 1e-12) {
    return kit.results().fail(spec.id, "the registered dropout does not use the constructor's probability",
                              {fmt::format("constructed with dropout={}, the registered Dropout has p={}", kP, *p)});
  }
  return kit.results().pass(spec.id, "the registered Dropout uses the constructor's probability");
}

// Each training-mode output is the eval one (nothing dropped), linear2.bias
// alone (the hidden unit dropped), bias + a / (1 - p) (kept, scaled), or 0 /
// eval / (1 - p) (dropout on the output instead).
CheckResult dropout_placement(const kit::Kit& kit, const CheckSpec& spec) {
  const auto& results = kit.results();
  const auto& train = kit.input().at(kDropoutProbe);
  const auto& eval = kit.input().at(kDropoutProbeEval);
  for (const auto* run : {&train, &eval}) {
    if (auto why = kit.not_runnable(*run)) return results.skip(spec.id, "not assessed: " + *why);
  }
  std::string why;
  auto trained = learner_tensor(train, "output", why), evaluated = learner_tensor(eval, "output", why);
  if (!trained || !evaluated) return results.skip(spec.id, "not assessed: " + why);
  if (trained->sizes() != evaluated->sizes() || trained->size(-1) != kWidth) {
    return results.skip(spec.id, "not assessed: unexpected output shape " + shape_string(trained->sizes()));
  }
  auto o = trained->to(at::kDouble), e = evaluated->to(at::kDouble);
  // In eval mode every output channel is the same at every position (the hidden
  // pre-activations are constant): anything else is dropout left on.
  auto spread = (e - e.select(0, 0).select(0, 0)).abs().max().item<double>();
  if (spread > 1e-9) {
    return results.fail(
        spec.id,
        "in eval mode your outputs are still random: dropout must be off outside training (call "
        "the registered Dropout module, which module->eval() switches off, or pass is_training())",
        {"input: " + eval.describe(),
         fmt::format("outputs that should all equal their channel's value differ by up to {:.3g}", spread)});
  }
  auto a = e - kLinear2Bias;  // the learner's activation of the hidden value, per element
  // Every hidden pre-activation is 1 and linear2 the identity plus 0.5: in eval
  // mode each output is 0.5 + f(1), above 0.5 for any activation (GELU 0.84,
  // ReLU 1, SiLU 0.73, none 1). At or below it, something after linear2 changes
  // the output (a LayerNorm of it centres every output at 0), and the pattern
  // dropout leaves cannot be read through that.
  if (!(a > 0).all().item<bool>()) {
    return results.skip(spec.id,
                        "not assessed: in eval mode the probe's outputs are not linear2.bias plus an activation of 1 ("
                        "something after linear2 changes the output; see the numerics checks), so the pattern dropout "
                        "leaves cannot be read from them");
  }
  auto near = [](const at::Tensor& x, const at::Tensor& y) { return (x - y).abs() < 1e-9; };
  auto fraction = [](const at::Tensor& mask) { return mask.to(at::kDouble).mean().item<double>(); };
  const auto unchanged = near(o, e);
  const auto hidden_dropped = near(o, at::full_like(o, kLinear2Bias));
  const auto hidden_kept = near(o, kLinear2Bias + a / (1 - kP));
  const auto output_dropped = near(o, at::zeros_like(o));
  const auto output_kept = near(o, e / (1 - kP));
  std::vector<std::string> evidence = {"input: " + train.describe()};
  if (fraction(unchanged) == 1) {
    return results.fail(spec.id,
                        "in training mode nothing was dropped from the hidden activations: call the registered "
                        "dropout on GELU(linear1(x)) before linear2 (dropout on x, before linear1, does not belong "
                        "to the FFN and does not show here)",
                        evidence);
  }
  const double dropped = fraction(hidden_dropped), kept = fraction(hidden_kept);
  if (dropped + kept > 0.999) {
    evidence.push_back(fmt::format("{:.1f}% of the hidden activations dropped (p = {})", 100 * dropped, kP));
    if (std::abs(dropped - kP) > 0.03) {
      return results.fail(spec.id,
                          fmt::format("the hidden activations are dropped at rate {:.3f}, not at the "
                                      "constructor's p = {}",
                                      dropped, kP),
                          evidence);
    }
    return results.pass(spec.id, "dropout hits the hidden activations at rate p, survivors scaled by 1/(1-p)");
  }
  if (dropped + fraction(unchanged) > 0.999 && dropped > 0) {
    evidence.push_back(fmt::format("{:.1f}% dropped; the others equal their eval-mode values", 100 * dropped));
    return results.fail(spec.id,
                        "the surviving hidden activations are not scaled by 1/(1-p): use inverted dropout (the "
                        "registered Dropout does it), so that training and eval agree in expectation",
                        evidence);
  }
  if (fraction(output_dropped) + fraction(output_kept) > 0.999) {
    evidence.push_back(fmt::format("{:.1f}% of the outputs are exactly 0", 100 * fraction(output_dropped)));
    return results.fail(spec.id,
                        "dropout acts on the output of linear2, not on the hidden activations: it belongs between "
                        "the two layers, after GELU (the block applies its own dropout to the sub-layer's output)",
                        evidence);
  }
  return results.fail(spec.id,
                      "in training mode the outputs follow no dropout pattern the grader recognises: apply the "
                      "registered dropout once, to GELU(linear1(x)), before linear2",
                      evidence);
}

std::string permuted_case(const std::string& id) { return id + "~positions_permuted"; }

void add_permuted(kit::Kit& kit, std::vector<wire::Record>& cases, at::Generator&) {
  std::vector<wire::Record> twins;
  for (const auto& spec : kit.exercise().checks) {
    if (spec.kind != "positions_permuted") continue;
    for (const auto& id : spec.cases) {
      auto twin = kit::planned_case(cases, id, "check '" + spec.id + "'");
      twin.strings["case"] = permuted_case(id);
      twin.strings["describe"] += ", positions in reverse order";
      twin.tensors.erase("grad_output");
      twin.tensors[wire::key::input("x")] = twin.tensor(wire::key::input("x")).flip(1);
      twins.push_back(std::move(twin));
    }
  }
  for (auto& twin : twins) cases.push_back(std::move(twin));
}

CheckResult positions_permuted(const kit::Kit& kit, const CheckSpec& spec) {
  const auto& results = kit.results();
  const auto id = spec.cases.front();
  const auto& base = kit.input().at(id);
  const auto& twin = kit.input().at(permuted_case(id));
  for (const auto* run : {&base, &twin}) {
    if (auto why = kit.not_runnable(*run)) return results.skip(spec.id, "not assessed: " + *why);
  }
  std::string why;
  auto before = learner_tensor(base, "output", why), after = learner_tensor(twin, "output", why);
  if (!before || !after) return results.skip(spec.id, "not assessed: " + why);
  const auto& again = kit.input().at(kit::repeat_case(id));
  auto repeat = kit.not_runnable(again) ? std::nullopt : learner_tensor(again, "output", why);
  if (!repeat || !compare(*before, *repeat, kit.exercise().tolerance("float64")).ok) {
    return results.skip(spec.id,
                        "not assessed: your output changes between two eval-mode runs on the same input "
                        "(see the eval-mode check), so positions cannot be compared");
  }
  if (before->dim() != 3 || before->sizes() != after->sizes()) {
    return results.skip(spec.id, "not assessed: the output has shape " + shape_string(before->sizes()));
  }
  auto cmp = compare(before->to(at::kDouble).flip(1), after->to(at::kDouble), kit.exercise().tolerance("float64"));
  if (cmp.ok) return results.pass(spec.id, "reversing the positions reverses the output: each position on its own");
  return results.fail(
      spec.id,
      "the output at a position depends on where the other tokens are: the FFN must act on each "
      "position alone (Linear on the last dimension, no reshape across positions)",
      {"input: " + twin.describe(), "your output reversed vs your output on reversed input: " + cmp.detail});
}

}  // namespace

std::unique_ptr<Suite> make_suite(const Exercise& exercise) {
  auto suite = std::make_unique<kit::Kit>(exercise, reference_of, keys_of(bends()));
  suite->extra_cases(add_probes);
  suite->extra_cases(add_permuted);
  suite->custom("activation_pattern", activation_pattern);
  suite->custom("dropout_probability", dropout_probability);
  suite->custom("dropout_placement", dropout_placement);
  suite->custom("positions_permuted", positions_permuted);
  return suite;
}

}  // namespace grader::exercise_feed_forward
