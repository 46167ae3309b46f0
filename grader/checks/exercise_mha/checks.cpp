// Parent side of exercise_mha: the reference with its replayable mistakes and
// the attention probe; everything else is exercise.yaml and the kit.
#include <ATen/ATen.h>

#include <cmath>
#include <functional>
#include <map>

#include "checks/kit/kit.h"
#include "multi_head_attention.h"

namespace grader::exercise_mha {
namespace {

using reference::MhsaVariant;
const reference::Projections kNames{"q_linear", "k_linear", "v_linear", "out_linear"};

// Each replayable mistake of exercise.yaml, as a bend of the reference.
const std::map<std::string, std::function<void(MhsaVariant&, double d_model, double head_dim)>>& bends() {
  using reference::HeadSplit;
  using reference::MaskStage;
  static const std::map<std::string, std::function<void(MhsaVariant&, double, double)>> table = {
      {"no_scaling", [](auto& v, double, double) { v.attention.scale = 1.0; }},
      {"float32_scale", [](auto& v, double, double hd) { v.attention.scale = kit::float32_inverse_sqrt(hd); }},
      {"float32_sqrt", [](auto& v, double, double hd) { v.attention.scale = kit::inverse_of_float32_sqrt(hd); }},
      {"scaled_by_d_model", [](auto& v, double d, double) { v.attention.scale = 1.0 / std::sqrt(d); }},
      {"softmax_over_queries", [](auto& v, double, double) { v.attention.softmax_dim = -2; }},
      {"mask_inverted", [](auto& v, double, double) { v.attention.mask_stage = MaskStage::inverted; }},
      {"mask_ignored", [](auto& v, double, double) { v.attention.mask_stage = MaskStage::ignored; }},
      {"mask_filled_with_zero", [](auto& v, double, double) { v.attention.mask_stage = MaskStage::fill_zero; }},
      {"mask_after_softmax", [](auto& v, double, double) { v.attention.mask_stage = MaskStage::after_softmax; }},
      {"split_without_transpose", [](auto& v, double, double) { v.split = HeadSplit::no_transpose; }},
      {"merge_without_transpose", [](auto& v, double, double) { v.merge_transposes = false; }},
      {"no_output_projection", [](auto& v, double, double) { v.output_projection = false; }},
      {"key_from_query_input", [](auto& v, double, double) { v.key_from_query_input = true; }},
      {"kv_from_query_input",
       [](auto& v, double, double) {
         v.key_from_query_input = true;
         v.value_from_query_input = true;
       }},
  };
  return table;
}

kit::Tensors reference_of(const kit::CaseData& data, const std::vector<std::string>& mistakes) {
  MhsaVariant variant;
  for (const auto& mistake : mistakes)
    bends().at(mistake)(variant, static_cast<double>(data.dims.at("D")),
                        static_cast<double>(data.dims.at("D")) / static_cast<double>(data.dims.at("H")));
  auto mask = data.inputs.count("mask") ? data.inputs.at("mask") : at::Tensor();
  const auto& query = data.inputs.at("query");
  const auto& key = data.inputs.at("key");
  // Keys projected from the query input only fit the values when the lengths
  // agree; keys and values both from it fit any values, but not a mask that
  // has the key's length.
  if (query.size(1) != key.size(1)) {
    if (variant.key_from_query_input && !variant.value_from_query_input) return {};
    if (variant.value_from_query_input && mask.defined() && mask.size(-1) != 1) return {};
  }
  return {{"output", reference::multi_head_attention(query, key, data.inputs.at("value"), mask, data.params,
                                                     data.dims.at("H"), kNames, variant)
                         .output}};
}

// Inputs and weights that turn the module into its attention weights: every
// q and k feature is a_i / sqrt(d_k) and b_j / sqrt(d_k) (so q.k = a_i b_j),
// value token j is one-hot in each head's slice plus a column of ones, and
// out_linear is the identity: output feature h*d_k + j is head h's weight on key j.
kit::AttentionProbe probe() {
  kit::AttentionProbe p;
  p.dims = {{"B", 2}, {"H", 4}, {"Nq", 3}, {"Nk", 5}, {"D", 24}};
  p.head_dim = "D/H";
  p.quantities = {{"d_k", "D/H"}, {"d_model", "D"}, {"num_heads", "H"}, {"Nq", "Nq"}, {"Nk", "Nk"}};
  p.design = [](wire::Record& r, const at::Tensor& a, const at::Tensor& b, const at::Tensor& mask) {
    const int64_t B = a.size(0), Nq = a.size(1), Nk = b.size(1), D = 24, H = 4, d_k = D / H;
    auto options = at::TensorOptions().dtype(at::kDouble);
    auto query = at::zeros({B, Nq, D}, options), key = at::zeros({B, Nk, D}, options);
    query.select(-1, 0).copy_(a);
    key.select(-1, 0).copy_(b);
    auto value = at::zeros({B, Nk, D}, options);
    value.narrow(-1, 0, Nk).copy_(at::eye(Nk, options));
    value.select(-1, Nk).fill_(1);
    auto projection = at::zeros({D, D}, options);
    projection.select(1, 0).fill_(1 / std::sqrt(static_cast<double>(d_k)));
    auto v_weight = at::zeros({D, D}, options);
    for (int64_t h = 0; h < H; ++h) {
      for (int64_t j = 0; j <= Nk; ++j) v_weight[h * d_k + j][j] = 1.0;
    }
    r.tensors[wire::key::input("query")] = query;
    r.tensors[wire::key::input("key")] = key;
    r.tensors[wire::key::input("value")] = value;
    if (mask.defined()) r.tensors[wire::key::input("mask")] = mask;
    r.tensors[wire::key::param("q_linear.weight")] = projection;
    r.tensors[wire::key::param("k_linear.weight")] = projection.clone();
    r.tensors[wire::key::param("v_linear.weight")] = v_weight;
    r.tensors[wire::key::param("out_linear.weight")] = at::eye(D, options);
    for (const char* name : {"q_linear", "k_linear", "v_linear", "out_linear"}) {
      r.tensors[wire::key::param(name) + ".bias"] = at::zeros({D}, options);
    }
  };
  p.read = [](const CaseRun& run, std::string& why) -> std::optional<at::Tensor> {
    auto output = learner_tensor(run, "output", why);
    if (!output) return std::nullopt;
    const int64_t B = 2, Nq = 3, Nk = 5, D = 24, H = 4;
    if (output->sizes() != at::IntArrayRef({B, Nq, D})) {
      why = "the output has shape " + shape_string(output->sizes()) + " on the probe";
      return std::nullopt;
    }
    return output->reshape({B, Nq, H, D / H}).transpose(1, 2).narrow(-1, 0, Nk);
  };
  return p;
}

}  // namespace

std::unique_ptr<Suite> make_suite(const Exercise& exercise) {
  auto suite = std::make_unique<kit::Kit>(exercise, reference_of, keys_of(bends()));
  suite->probe(probe());
  return suite;
}

}  // namespace grader::exercise_mha
