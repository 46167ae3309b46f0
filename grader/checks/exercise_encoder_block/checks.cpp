// Parent side of exercise_encoder_block: the reference with its replayable
// mistakes (pre-LN is one of them, so that it is named as such), and the last
// LayerNorm measured. Everything else is exercise.yaml and the kit.
#include <ATen/ATen.h>
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <map>

#include "checks/kit/kit.h"
#include "encoder_block_reference.h"
#include "base/errors.h"

namespace grader::exercise_encoder_block {
namespace {

using reference::EncoderBlockVariant;
using Bend = std::function<void(EncoderBlockVariant&)>;

const std::map<std::string, Bend>& bends() {
  static const std::map<std::string, Bend> table = {
      {"pre_ln", [](auto& v) { v.pre_ln = true; }},
      {"no_attention_residual", [](auto& v) { v.attention_residual = false; }},
      {"no_ffn_residual", [](auto& v) { v.ffn_residual = false; }},
      {"layernorm_eps_1e12", [](auto& v) { v.eps = 1e-12; }},
      {"ffn_reads_block_input", [](auto& v) { v.ffn_input = reference::FfnInput::block_input; }},
      {"ffn_reads_unnormed_sum", [](auto& v) { v.ffn_input = reference::FfnInput::unnormed_sum; }},
      {"relu", [](auto& v) { v.activation = reference::Activation::relu; }},
      {"mask_ignored", [](auto& v) { v.mask_stage = reference::MaskStage::ignored; }},
      {"mask_inverted", [](auto& v) { v.mask_stage = reference::MaskStage::inverted; }},
  };
  return table;
}

kit::Tensors reference_of(const kit::CaseData& data, const std::vector<std::string>& mistakes) {
  // Dropout is random in training mode, unless each p is 0 or 1 (a dropout_sites case).
  if (data.train && !data.dropped) return {};
  EncoderBlockVariant variant;
  for (const auto& mistake : mistakes) bends().at(mistake)(variant);
  if (data.dropped) {
    variant.drop_attention_output = data.dropped->count("dropout1") > 0;
    variant.drop_ffn_hidden = data.dropped->count("dropout") > 0;
    variant.drop_ffn_output = data.dropped->count("dropout2") > 0;
  }
  auto mask = data.inputs.count("mask") ? data.inputs.at("mask") : at::Tensor();
  return {{"output", reference::encoder_block(data.inputs.at("x"), mask, data.params, data.dims.at("H"), variant)}};
}

// A twin of shape_0 whose two LayerNorms have weight 1 and bias 0: each token
// of the output must then have mean 0 and (biased) variance sigma^2 / (sigma^2
// + eps) over d_model. norm1 at identity keeps sigma^2, the variance of the sum
// norm2 sees, near 1, so that the variance is 1 within 1e-3 (with random small
// norm1 weights sigma^2 fell to 0.01 and a correct block measured 0.9989).
const char* const kUnitNorm = "shape_0~unit_norm2";

void add_unit_norm(kit::Kit&, std::vector<wire::Record>& cases, at::Generator&) {
  auto twin = kit::planned_case(cases, "shape_0", "exercise_encoder_block");
  twin.tensors.erase("grad_output");
  twin.strings["case"] = kUnitNorm;
  twin.strings["describe"] += ", norm1 and norm2 with weight 1 and bias 0";
  for (const char* norm : {"norm1", "norm2"}) {
    const auto weight = wire::key::param(norm) + ".weight", bias = wire::key::param(norm) + ".bias";
    twin.tensors[weight] = at::ones_like(twin.tensor(weight));
    twin.tensors[bias] = at::zeros_like(twin.tensor(bias));
  }
  cases.push_back(std::move(twin));
}

CheckResult layernorm_measured(const kit::Kit& kit, const CheckSpec& spec) {
  const auto& results = kit.results();
  const auto& run = kit.input().at(kUnitNorm);
  if (auto why = kit.not_runnable(run)) return results.skip(spec.id, "not assessed: " + *why);
  std::string why;
  auto output = learner_tensor(run, "output", why);
  if (!output) return results.skip(spec.id, "not assessed: " + why);
  if (output->dim() != 3)
    return results.skip(spec.id, "not assessed: the output has shape " + shape_string(output->sizes()));
  auto y = output->to(at::kDouble);
  const double d = static_cast<double>(y.size(-1));
  auto mean = y.mean(-1), variance = y.var(-1, /*unbiased=*/false);
  std::vector<std::string> evidence = {
      "input: " + run.describe(),
      fmt::format("per token over d_model: |mean| up to {:.3g}, variance from {:.6g} to {:.6g}",
                  mean.abs().max().item<double>(), variance.min().item<double>(), variance.max().item<double>())};
  if (mean.abs().max().item<double>() > 1e-6) {
    return results.fail(spec.id,
                        "the block's output is not layer-normalised over d_model: with norm2's weight 1 and bias 0 "
                        "each token's features must have mean 0; the post-LN block ends with norm2 applied to the "
                        "residual sum (a pre-LN block ends without it)",
                        evidence);
  }
  auto near = [&](double want) { return (variance - want).abs().max().item<double>() < 1e-3; };
  if (near(1.0)) return results.pass(spec.id, "the output is normalised over d_model: mean 0, variance 1 per token");
  if (near((d - 1) / d)) {
    return results.fail(spec.id,
                        fmt::format("the variance per token is (d_model - 1)/d_model = {:.4g}, not 1: your LayerNorm "
                                    "divides by d_model - 1 (the unbiased variance); LayerNorm uses the biased one "
                                    "(var(-1, unbiased=false)), or use the registered LayerNorm modules",
                                    (d - 1) / d),
                        evidence);
  }
  return results.fail(spec.id,
                      "each token's features have mean 0 but not variance 1: normalise by the standard deviation over "
                      "d_model (with epsilon 1e-5 inside the square root)",
                      evidence);
}

// A twin of shape_0 that reads each LayerNorm's epsilon: both sub-layers off
// (zero self_attn.out_proj and linear2), both LayerNorms at weight 1 and bias
// 0, and each token of x centred and scaled to a variance v from 1e-12 to
// 1e-2. The block is then norm2(norm1(x)), and each output token's (biased)
// variance w satisfies 1/w - 1 = eps2 + eps1 * eps2 / v: a straight line in
// 1/v whose two coefficients give both epsilons, which at the normal scale of
// the other cases move the output by only ~1e-5 (an unexplained difference).
const char* const kEpsilon = "shape_0~epsilon";
constexpr double kEps = 1e-5;  // the statement's (LibTorch's default)

void add_epsilon(kit::Kit&, std::vector<wire::Record>& cases, at::Generator&) {
  auto twin = kit::planned_case(cases, "shape_0", "exercise_encoder_block");
  twin.tensors.erase("grad_output");
  twin.strings["case"] = kEpsilon;
  twin.strings["describe"] +=
      ", both sub-layers off (self_attn.out_proj and linear2 zero), norm1 and norm2 with weight 1 and bias 0, "
      "tokens of x with variances from 1e-12 to 1e-2";
  for (const char* norm : {"norm1", "norm2"}) {
    const auto weight = wire::key::param(norm) + ".weight", bias = wire::key::param(norm) + ".bias";
    twin.tensors[weight] = at::ones_like(twin.tensor(weight));
    twin.tensors[bias] = at::zeros_like(twin.tensor(bias));
  }
  for (const char* off : {"self_attn.out_proj.weight", "self_attn.out_proj.bias", "linear2.weight", "linear2.bias"}) {
    const auto key = wire::key::param(off);
    twin.tensors[key] = at::zeros_like(twin.tensor(key));
  }
  const auto key = wire::key::input("x");
  const auto x = twin.tensor(key);
  const auto centred = x - x.mean(-1, /*keepdim=*/true);
  const auto unit = centred / centred.pow(2).mean(-1, /*keepdim=*/true).sqrt();  // mean 0, variance 1 per token
  const auto scale = at::logspace(-6, -1, x.size(0) * x.size(1), 10.0, x.options()).reshape({x.size(0), x.size(1), 1});
  twin.tensors[key] = unit * scale;
  cases.push_back(std::move(twin));
}

// Each LayerNorm's epsilon read off the epsilon twin (above). A measurement:
// where it finds another epsilon, that explains the numerics failures no
// known mistake replays. It reads nothing where the block is not
// layer-normalised (layernorm_measured says so) or where the twin's output is
// no pair of LayerNorms with one epsilon each (a LayerNorm written another way).
CheckResult layernorm_epsilon(const kit::Kit& kit, const CheckSpec& spec) {
  const auto& results = kit.results();
  const auto& run = kit.input().at(kEpsilon);
  const auto& unit = kit.input().at(kUnitNorm);
  for (const auto* r : {&run, &unit}) {
    if (auto why = kit.not_runnable(*r)) return results.skip(spec.id, "not assessed: " + *why);
  }
  std::string why;
  auto output = learner_tensor(run, "output", why);
  auto unit_output = output ? learner_tensor(unit, "output", why) : std::nullopt;
  if (!output || !unit_output) return results.skip(spec.id, "not assessed: " + why);
  const auto x = run.request.tensor(wire::key::input("x")).to(at::kDouble);
  if (output->sizes() != x.sizes() || unit_output->sizes() != x.sizes()) {
    return results.skip(spec.id, "not assessed: the output has shape " + shape_string(output->sizes()));
  }
  auto normalised = [](const at::Tensor& y) {
    return at::isfinite(y).all().item<bool>() && y.mean(-1).abs().max().item<double>() <= 1e-6;
  };
  const auto unit_y = unit_output->to(at::kDouble);
  if (!normalised(unit_y) || (unit_y.var(-1, /*unbiased=*/false) - 1).abs().max().item<double>() >= 1e-3) {
    return results.skip(spec.id,
                        "not assessed: the output is not layer-normalised over d_model (see layernorm_measured), so "
                        "no epsilon can be read from it");
  }
  const auto y = output->to(at::kDouble);
  if (!normalised(y)) {
    return results.skip(spec.id,
                        "not assessed: with both sub-layers off your output's tokens do not have mean 0, so it is "
                        "not norm2(norm1(x)) and no epsilon can be read from it");
  }
  // 1/w - 1 = a + b / v, fitted by least squares on relative errors, with
  // a = eps2 and b = eps1 * eps2.
  const auto v = x.var(-1, false).flatten(), w = y.var(-1, false).flatten();
  const auto r = 1.0 / w - 1.0, u = 1.0 / v;
  const double top = u.max().item<double>();
  const auto weight = 1.0 / (r.abs() + 1e-13);
  const auto design = at::stack({weight, weight * u / top}, 1);
  const auto solution = std::get<0>(at::linalg_lstsq(design, (weight * r).unsqueeze(1))).flatten();
  const double a = solution[0].item<double>(), b = solution[1].item<double>() / top;
  // Within a relative 1e-6, or 1e-13 (float64 rounding of 1/w - 1 near w = 1).
  const auto error = (a + b * u - r).abs();
  const bool fits = (error <= r.abs() * 1e-6 + 1e-13).all().item<bool>();
  const double misfit = (error / (r.abs() + 1e-13)).max().item<double>();
  // eps1 is read only through eps2: with no epsilon in the second, the first's cannot be told.
  const bool second_has_none = std::abs(a) <= 1e-13 && std::abs(b) * top <= 1e-13;
  const double eps2 = second_has_none ? 0.0 : a, eps1 = second_has_none ? 0.0 : b / a;
  // An epsilon is a power of ten (1e-5, 1e-6, 1e-12); anything else read here
  // is a LayerNorm given a scaled input (x + x + attention: 1e-5 / 4), which
  // an epsilon cannot be told from: no claim then.
  auto usual = [](double eps) {
    return eps > 0 && eps <= 1e-2 && std::abs(eps / std::pow(10.0, std::round(std::log10(eps))) - 1) <= 1e-2;
  };
  const bool readable = fits && (second_has_none || (a > 1e-13 && b > 0 && usual(eps1) && usual(eps2)));
  const auto reference = kit.expected(run).at("output").var(-1, false).flatten();
  std::vector<std::string> evidence = {
      "input: " + run.describe(),
      fmt::format("the token of variance {:.3g}: your output's variance {:.6g}, the reference's (epsilon 1e-5) {:.6g}; "
                  "the token of variance {:.3g}: yours {:.6g}, the reference's {:.6g}",
                  v.min().item<double>(), w[v.argmin()].item<double>(), reference[v.argmin()].item<double>(),
                  v.max().item<double>(), w[v.argmax()].item<double>(), reference[v.argmax()].item<double>())};
  if (!readable) {
    return results.skip(spec.id,
                        "not assessed: on tokens of tiny variance your output follows no pair of LayerNorms with one "
                        "usual epsilon each (a LayerNorm written by hand, its epsilon outside the square root? an "
                        "input scaled on its way to a LayerNorm?)");
  }
  evidence.push_back(
      second_has_none
          ? fmt::format("per token, 1/variance - 1 of your output is 0 within 1e-13: the second LayerNorm adds no "
                        "epsilon")
          : fmt::format("per token, 1/variance - 1 of your output = {:.3g} + {:.3g} / (the token's variance in x), "
                        "within a relative {:.1g}: epsilon {:.3g} in the first LayerNorm, {:.3g} in the second",
                        a, b, misfit, eps1, eps2));
  auto off = [](double eps) { return std::abs(eps - kEps) > 1e-3 * kEps; };
  if (!second_has_none && !off(eps1) && !off(eps2))
    return results.pass(spec.id, "both LayerNorms use epsilon 1e-5, measured");
  const auto which = second_has_none
                         ? std::string("your second LayerNorm uses epsilon 0 (none)")
                         : std::abs(eps1 - eps2) <= 1e-3 * std::max(eps1, eps2)
                               ? fmt::format("both your LayerNorms use epsilon {:.2g}", eps2)
                               : fmt::format("your LayerNorms use epsilon {:.2g} (norm1) and {:.2g} (norm2)", eps1, eps2);
  return results.fail(spec.id,
                      which + ", measured on tokens of tiny variance; the statement's is 1e-5, LibTorch's default: "
                              "build each as LayerNorm(LayerNormOptions({d_model})) without .eps(...), or pass 1e-5 "
                              "to layer_norm",
                      evidence);
}

}  // namespace

std::unique_ptr<Suite> make_suite(const Exercise& exercise) {
  auto suite = std::make_unique<kit::Kit>(exercise, reference_of, keys_of(bends()));
  suite->dropout_sites({"dropout1", "dropout", "dropout2"});
  suite->extra_cases(add_unit_norm);
  suite->extra_cases(add_epsilon);
  suite->custom("layernorm_measured", layernorm_measured);
  suite->measurement("layernorm_epsilon", layernorm_epsilon);
  return suite;
}

}  // namespace grader::exercise_encoder_block
