// Parent side of exercise_mhsa: the reference with its replayable mistakes,
// the attention probe, and the two dropout checks no kit kind covers;
// everything else is exercise.yaml and the kit.
#include <ATen/ATen.h>
#include <fmt/format.h>

#include <cmath>
#include <functional>
#include <map>

#include "checks/kit/kit.h"
#include "multi_head_attention.h"

namespace grader::exercise_mhsa {
namespace {

using reference::MhsaVariant;
using Bend = std::function<void(MhsaVariant&, double dim, double head_dim)>;

// Each replayable mistake of exercise.yaml, as a bend of the reference.
const std::map<std::string, Bend>& bends() {
  using reference::HeadSplit;
  static const std::map<std::string, Bend> table = {
      {"no_scaling", [](auto& v, double, double) { v.attention.scale = 1.0; }},
      {"float32_scale", [](auto& v, double, double hd) { v.attention.scale = kit::float32_inverse_sqrt(hd); }},
      {"float32_sqrt", [](auto& v, double, double hd) { v.attention.scale = kit::inverse_of_float32_sqrt(hd); }},
      {"scaled_by_dim", [](auto& v, double dim, double) { v.attention.scale = 1.0 / std::sqrt(dim); }},
      {"scaled_by_head_dim", [](auto& v, double, double hd) { v.attention.scale = 1.0 / hd; }},
      {"scale_multiplied", [](auto& v, double, double hd) { v.attention.scale = std::sqrt(hd); }},
      {"softmax_over_queries", [](auto& v, double, double) { v.attention.softmax_dim = -2; }},
      {"softmax_over_heads", [](auto& v, double, double) { v.attention.softmax_dim = 1; }},
      {"split_without_transpose", [](auto& v, double, double) { v.split = HeadSplit::no_transpose; }},
      {"merge_without_transpose", [](auto& v, double, double) { v.merge_transposes = false; }},
      {"heads_interleaved", [](auto& v, double, double) { v.split = HeadSplit::interleaved; }},
      {"no_output_projection", [](auto& v, double, double) { v.output_projection = false; }},
      {"key_from_query_projection", [](auto& v, double, double) { v.key_uses_query_projection = true; }},
      {"value_not_projected", [](auto& v, double, double) { v.value_projection = false; }},
  };
  return table;
}

kit::Tensors reference_of(const kit::CaseData& data, const std::vector<std::string>& mistakes) {
  MhsaVariant variant;
  const double dim = static_cast<double>(data.dims.at("D")), heads = static_cast<double>(data.dims.at("H"));
  for (const auto& mistake : mistakes) bends().at(mistake)(variant, dim, dim / heads);
  return {{"output",
           reference::multi_head_self_attention(data.inputs.at("x"), data.params, data.dims.at("H"), variant).output}};
}

void zero_biases(wire::Record& r, int64_t dim) {
  for (const char* name : {"q_proj", "k_proj", "v_proj", "out_proj"}) {
    r.tensors[wire::key::param(name) + ".bias"] = at::zeros({dim}, at::kDouble);
  }
}

// Token features 0 and 1 carry a_i and b_i, features 2 + j a one-hot token
// id and feature 2 + N a one: q_proj and k_proj read features 0 and 1 (so
// q.k = a_i b_j), v_proj copies the token id into each head's slice plus the
// one, out_proj is the identity: output feature h*head_dim + j is head h's
// weight on token j.
kit::AttentionProbe probe() {
  constexpr int64_t B = 2, N = 5, D = 24, H = 4, hd = D / H;
  kit::AttentionProbe p;
  p.dims = {{"B", B}, {"N", N}, {"Nq", N}, {"Nk", N}, {"D", D}, {"H", H}, {"dropout_pct", 0}};
  p.head_dim = "D/H";
  p.quantities = {{"head_dim", "D/H"}, {"dim", "D"}, {"num_heads", "H"}, {"N", "N"}};
  p.design = [](wire::Record& r, const at::Tensor& a, const at::Tensor& b, const at::Tensor&) {
    auto x = at::zeros({B, N, D}, at::kDouble);
    x.select(-1, 0).copy_(a);
    x.select(-1, 1).copy_(b);
    x.narrow(-1, 2, N).copy_(at::eye(N, at::kDouble));
    x.select(-1, 2 + N).fill_(1);
    auto q = at::zeros({D, D}, at::kDouble), k = at::zeros({D, D}, at::kDouble), v = at::zeros({D, D}, at::kDouble);
    q.select(1, 0).fill_(1 / std::sqrt(static_cast<double>(hd)));
    k.select(1, 1).fill_(1 / std::sqrt(static_cast<double>(hd)));
    for (int64_t h = 0; h < H; ++h) {
      for (int64_t j = 0; j <= N; ++j) v[h * hd + j][2 + j] = 1.0;
    }
    r.tensors[wire::key::input("x")] = x;
    r.tensors[wire::key::param("q_proj.weight")] = q;
    r.tensors[wire::key::param("k_proj.weight")] = k;
    r.tensors[wire::key::param("v_proj.weight")] = v;
    r.tensors[wire::key::param("out_proj.weight")] = at::eye(D, at::kDouble);
    zero_biases(r, D);
  };
  p.read = [](const CaseRun& run, std::string& why) -> std::optional<at::Tensor> {
    auto output = learner_tensor(run, "output", why);
    if (!output) return std::nullopt;
    if (output->sizes() != at::IntArrayRef({B, N, D})) {
      why = "the output has shape " + shape_string(output->sizes()) + " on the probe";
      return std::nullopt;
    }
    return output->reshape({B, N, H, hd}).transpose(1, 2).narrow(-1, 0, N);
  };
  return p;
}

// The dropout probe, run in training and in eval mode on the same input: each
// head's values are one-hot token ids plus a column of ones and out_proj is
// the identity, so output feature h*12 + j (j < 8) is head h's weight on token
// j after dropout and feature h*12 + 8 the sum of that row.
constexpr int64_t kB = 16, kN = 8, kD = 24, kH = 2, kHd = kD / kH;
constexpr double kDropout = 0.3;

void add_dropout_probe(kit::Kit& kit, std::vector<wire::Record>& cases, at::Generator& generator) {
  CaseSpec spec{
      "dropout_probe", {{"B", kB}, {"N", kN}, {"D", kD}, {"H", kH}, {"dropout_pct", 30}}, {{"mode", "train"}}};
  auto train = kit.make_case(spec, generator, 900001);
  auto x = at::randn({kB, kN, kD}, generator, at::kDouble);
  x.narrow(-1, 0, kN).copy_(at::eye(kN, at::kDouble).expand({kB, kN, kN}));
  train.tensors[wire::key::input("x")] = x;
  train.tensors[wire::key::param("q_proj.weight")] = at::randn({kD, kD}, generator, at::kDouble) * 0.3;
  train.tensors[wire::key::param("k_proj.weight")] = at::randn({kD, kD}, generator, at::kDouble) * 0.3;
  auto v_weight = at::zeros({kD, kD}, at::kDouble);
  for (int64_t h = 0; h < kH; ++h) {
    for (int64_t j = 0; j < kN; ++j) v_weight[h * kHd + j][j] = 1.0;
  }
  train.tensors[wire::key::param("v_proj.weight")] = v_weight;
  train.tensors[wire::key::param("out_proj.weight")] = at::eye(kD, at::kDouble);
  zero_biases(train, kD);
  auto v_bias = at::zeros({kD}, at::kDouble);
  for (int64_t h = 0; h < kH; ++h) v_bias[h * kHd + kN] = 1.0;
  train.tensors[wire::key::param("v_proj.bias")] = v_bias;
  train.strings["describe"] += ", probe weights";
  auto eval = train;
  eval.strings["case"] = "dropout_probe_eval";
  eval.ints["train"] = 0;
  eval.strings["describe"] = train.strings["describe"] + " (the same in eval mode)";
  cases.push_back(train);
  cases.push_back(eval);
}

CheckResult dropout_probability(const kit::Kit& kit, const CheckSpec& spec) {
  const auto& run = kit.input().at("dropout_probe");
  if (!run.response.ints.count("constructed")) return kit.results().threw(spec.id, run);
  auto p = kit::registered_dropout(run, "dropout");
  if (!p) return kit.results().skip(spec.id, "not assessed: no Dropout registered as 'dropout'");
  if (std::abs(*p - kDropout) > 1e-12) {
    return kit.results().fail(spec.id, "the registered dropout does not use the constructor's probability",
                              {fmt::format("constructed with dropout={}, registered Dropout has p={}", kDropout, *p)});
  }
  return kit.results().pass(spec.id, "dropout uses the probability given to the constructor");
}

// Judged against the learner's own eval-mode weights, so a mistake elsewhere
// (a scale, a layout) does not hide how dropout behaves.
CheckResult dropout_on_attention_weights(const kit::Kit& kit, const CheckSpec& spec) {
  const auto& results = kit.results();
  const auto& run = kit.input().at("dropout_probe");
  const auto& eval = kit.input().at("dropout_probe_eval");
  for (const auto* r : {&run, &eval}) {
    if (r->threw()) return results.threw(spec.id, *r);
    if (auto why = kit.not_runnable(*r)) return results.skip(spec.id, "not assessed: " + *why);
  }
  std::string why;
  auto output = learner_tensor(run, "output", why);
  auto clean_output = learner_tensor(eval, "output", why);
  if (!output || !clean_output) return results.fail(spec.id, why);
  if (output->sizes() != at::IntArrayRef({kB, kN, kD}) || clean_output->sizes() != output->sizes()) {
    return results.skip(spec.id, "not assessed: the output has the wrong shape (see output_shape)");
  }
  auto heads = [](const at::Tensor& t) { return t.to(at::kDouble).reshape({kB, kN, kH, kHd}).transpose(1, 2); };
  auto observed = heads(*output).narrow(-1, 0, kN);
  auto row_sums = heads(*output).select(-1, kN);
  auto clean = heads(*clean_output).narrow(-1, 0, kN);
  if ((clean.sum(-1) - 1).abs().max().item<double>() > 1e-6 || !(clean > 0).all().item<bool>()) {
    return results.skip(spec.id,
                        "not assessed: in eval mode the probe's output is not a distribution over the keys "
                        "(see the other checks), so dropout cannot be read from it");
  }
  const auto evidence_base = "input: " + run.describe();
  auto zeros = observed.eq(0);
  const double count = static_cast<double>(observed.numel());
  const double rate = zeros.sum().item<double>() / count;
  const double z = (rate - kDropout) / std::sqrt(kDropout * (1 - kDropout) / count);
  const auto rate_text =
      fmt::format("observed drop rate {:.3g} over {} attention weights, expected p = {} (z = {:.3g})", rate,
                  observed.numel(), kDropout, z);
  if (rate == 0) {
    if (compare(clean, observed, kit.exercise().tolerance("float64")).ok) {
      return results.fail(spec.id, "in training mode nothing is dropped: dropout must be active in training",
                          {evidence_base, rate_text});
    }
    return results.fail(spec.id,
                        "in training no attention weight is exactly zero although the output is perturbed: dropout "
                        "must act on the weights after the softmax, not on the scores before it",
                        {evidence_base, rate_text});
  }
  if (std::abs(z) > 5) {
    const bool swapped = std::abs(rate - (1 - kDropout)) < 5 * std::sqrt(kDropout * (1 - kDropout) / count);
    return results.fail(spec.id,
                        swapped ? "attention weights are dropped at rate 1 - p: p is the drop probability, not the "
                                  "keep probability"
                                : "the fraction of dropped attention weights does not match the dropout probability",
                        {evidence_base, rate_text});
  }
  auto kept = ~zeros;
  auto ratio = observed.masked_select(kept) / clean.masked_select(kept);
  if (!compare(at::full_like(ratio, 1.0 / (1 - kDropout)), ratio, {1e-6, 1e-9}).ok) {
    return results.fail(spec.id, "the surviving attention weights are not scaled by 1/(1-p) (inverted dropout)",
                        {evidence_base, fmt::format("kept weight / eval-mode weight: median {:.6g}, expected {:.6g}",
                                                    ratio.median().item<double>(), 1 / (1 - kDropout))});
  }
  auto sum_cmp = compare(observed.sum(-1), row_sums, kit.exercise().tolerance("float64"));
  if (!sum_cmp.ok) {
    return results.fail(spec.id,
                        "the drop pattern does not follow the attention weights: dropout is applied to another tensor "
                        "(values, heads or output), not to the weights after the softmax",
                        {evidence_base, "row sums of the kept weights vs the values' sum column: " + sum_cmp.detail});
  }
  return results.pass(spec.id, rate_text + "; survivors scaled by 1/(1-p)");
}

}  // namespace

std::unique_ptr<Suite> make_suite(const Exercise& exercise) {
  auto suite = std::make_unique<kit::Kit>(exercise, reference_of, keys_of(bends()));
  suite->probe(probe());
  suite->extra_cases(add_dropout_probe);
  suite->custom("dropout_probability", dropout_probability);
  suite->custom("dropout_on_attention_weights", dropout_on_attention_weights);
  return suite;
}

}  // namespace grader::exercise_mhsa
