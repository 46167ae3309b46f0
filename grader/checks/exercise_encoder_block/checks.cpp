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

}  // namespace

std::unique_ptr<Suite> make_suite(const Exercise& exercise) {
  auto suite = std::make_unique<kit::Kit>(exercise, reference_of, keys_of(bends()));
  suite->dropout_sites({"dropout1", "dropout", "dropout2"});
  suite->extra_cases(add_unit_norm);
  suite->custom("layernorm_measured", layernorm_measured);
  return suite;
}

}  // namespace grader::exercise_encoder_block
