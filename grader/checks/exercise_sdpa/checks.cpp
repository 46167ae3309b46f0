// Parent side of exercise_sdpa: the reference with its replayable mistakes,
// the attention probe, and output_uses_weights; everything else is
// exercise.yaml and the kit.
#include <ATen/ATen.h>

#include <cmath>
#include <functional>
#include <map>

#include "attention.h"
#include "checks/kit/kit.h"

namespace grader::exercise_sdpa {
namespace {

using reference::SdpaVariant;
using Bend = std::function<void(SdpaVariant&, const kit::Dims&)>;

double sqrt_of(const kit::Dims& d, const char* name) { return std::sqrt(static_cast<double>(d.at(name))); }

// Each replayable mistake of exercise.yaml, as a bend of the reference.
const std::map<std::string, Bend>& bends() {
  using reference::MaskStage;
  static const std::map<std::string, Bend> table = {
      {"no_scaling", [](auto& v, const auto&) { v.scale = 1.0; }},
      {"float32_scale", [](auto& v, const auto& d) { v.scale = kit::float32_inverse_sqrt(d.at("d_k")); }},
      {"float32_sqrt", [](auto& v, const auto& d) { v.scale = kit::inverse_of_float32_sqrt(d.at("d_k")); }},
      {"scaled_by_dk", [](auto& v, const auto& d) { v.scale = 1.0 / static_cast<double>(d.at("d_k")); }},
      {"scaled_by_seq_len", [](auto& v, const auto& d) { v.scale = 1.0 / sqrt_of(d, "Nq"); }},
      {"scaled_by_value_dim", [](auto& v, const auto& d) { v.scale = 1.0 / sqrt_of(d, "d_v"); }},
      {"scale_multiplied", [](auto& v, const auto& d) { v.scale = sqrt_of(d, "d_k"); }},
      {"softmax_over_queries", [](auto& v, const auto&) { v.softmax_dim = -2; }},
      {"softmax_over_heads", [](auto& v, const auto&) { v.softmax_dim = 1; }},
      {"key_reshaped_not_transposed", [](auto& v, const auto&) { v.key_reshaped = true; }},
      {"mask_after_softmax", [](auto& v, const auto&) { v.mask_stage = MaskStage::after_softmax; }},
      {"mask_inverted", [](auto& v, const auto&) { v.mask_stage = MaskStage::inverted; }},
      {"mask_ignored", [](auto& v, const auto&) { v.mask_stage = MaskStage::ignored; }},
      {"mask_filled_with_zero", [](auto& v, const auto&) { v.mask_stage = MaskStage::fill_zero; }},
      {"mask_added", [](auto& v, const auto&) { v.mask_stage = MaskStage::added; }},
      {"weights_before_softmax", [](auto& v, const auto&) { v.weights_before_softmax = true; }},
  };
  return table;
}

kit::Tensors reference_of(const kit::CaseData& data, const std::vector<std::string>& mistakes) {
  SdpaVariant variant;
  for (const auto& mistake : mistakes) bends().at(mistake)(variant, data.dims);
  auto mask = data.inputs.count("mask") ? data.inputs.at("mask") : at::Tensor();
  auto [output, weights] = reference::scaled_dot_product_attention(data.inputs.at("query"), data.inputs.at("key"),
                                                                   data.inputs.at("value"), mask, variant);
  return {{"output", output}, {"weights", weights}};
}

// Every query is a_i e_0 and every key b_j e_0, so q.k = a_i b_j; the
// weights come back as they are.
kit::AttentionProbe probe() {
  kit::AttentionProbe p;
  p.dims = {{"B", 2}, {"H", 2}, {"Nq", 3}, {"Nk", 5}, {"d_k", 8}, {"d_v", 6}};
  p.head_dim = "d_k";
  p.direct = true;
  p.quantities = {{"d_k", "d_k"}, {"d_v", "d_v"}, {"Nq", "Nq"}, {"Nk", "Nk"}, {"H", "H"}};
  p.design = [](wire::Record& r, const at::Tensor& a, const at::Tensor& b, const at::Tensor& mask) {
    auto query = at::zeros({2, 2, 3, 8}, at::kDouble), key = at::zeros({2, 2, 5, 8}, at::kDouble);
    query.select(-1, 0).copy_(a.unsqueeze(1).expand({2, 2, 3}));
    key.select(-1, 0).copy_(b.unsqueeze(1).expand({2, 2, 5}));
    r.tensors[wire::key::input("query")] = query;
    r.tensors[wire::key::input("key")] = key;
    r.tensors[wire::key::input("value")] = at::arange(2 * 2 * 5 * 6, at::kDouble).reshape({2, 2, 5, 6}).sin();
    if (mask.defined()) r.tensors[wire::key::input("mask")] = mask;
  };
  p.read = [](const CaseRun& run, std::string& why) -> std::optional<at::Tensor> {
    auto weights = learner_tensor(run, "weights", why);
    if (!weights) return std::nullopt;
    if (weights->sizes() != at::IntArrayRef({2, 2, 3, 5})) {
      why = "the weights have shape " + shape_string(weights->sizes()) + " on the probe";
      return std::nullopt;
    }
    return weights;
  };
  return p;
}

CheckResult output_uses_weights(const kit::Kit& kit, const CheckSpec& spec) {
  const auto& run = kit.input().at("shape_0");
  if (kit.not_runnable(run)) return kit.explain(spec.id, "shape_0");
  std::string why;
  auto output = learner_tensor(run, "output", why);
  auto weights = learner_tensor(run, "weights", why);
  if (!output || !weights) return kit.results().fail(spec.id, why);
  const auto& value = run.request.tensor(wire::key::input("value"));
  if (weights->dim() != 4 || weights->sizes().slice(0, 2) != value.sizes().slice(0, 2) ||
      weights->size(-1) != value.size(-2)) {
    return kit.results().skip(spec.id, "not assessed: the weights have the wrong shape");
  }
  auto implied = at::matmul(weights->to(at::kDouble), value);
  auto cmp = compare(implied, *output, kit.exercise().tolerance("float64"));
  if (cmp.ok) return kit.results().pass(spec.id, "the returned weights produce the returned output");
  return kit.results().fail(spec.id,
                            "the returned weights are not the ones the output was computed with: return the "
                            "post-softmax weights you multiply value by",
                            {"input: " + run.describe(), "weights @ value vs output: " + cmp.detail});
}

}  // namespace

std::unique_ptr<Suite> make_suite(const Exercise& exercise) {
  auto suite = std::make_unique<kit::Kit>(exercise, reference_of, keys_of(bends()));
  suite->probe(probe());
  suite->custom("output_uses_weights", output_uses_weights);
  return suite;
}

}  // namespace grader::exercise_sdpa
