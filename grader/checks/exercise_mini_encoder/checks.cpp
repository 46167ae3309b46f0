// Parent side of exercise_mini_encoder: the reference with its replayable
// mistakes, and three checks no kit kind covers: the layers are distinct
// modules, the pooling read off a probe, and "it learns". Everything else is
// exercise.yaml and the kit.
#include <ATen/ATen.h>
#include <fmt/format.h>

#include <cmath>
#include <functional>
#include <map>
#include <set>
#include <sstream>

#include "checks/kit/kit.h"
#include "base/errors.h"
#include "mini_encoder_reference.h"

namespace grader::exercise_mini_encoder {
namespace {

using reference::MiniEncoderVariant;
using Bend = std::function<void(MiniEncoderVariant&)>;

const std::map<std::string, Bend>& bends() {
  static const std::map<std::string, Bend> table = {
      {"no_embedding_scale", [](auto& v) { v.embedding_scaled = false; }},
      {"no_positions", [](auto& v) { v.positions = false; }},
      {"shared_layer", [](auto& v) { v.layers = reference::LayerStack::shared_last; }},
      {"layers_not_chained", [](auto& v) { v.layers = reference::LayerStack::unchained; }},
      {"relu_layers", [](auto& v) { v.activation = reference::Activation::relu; }},
      {"mask_not_to_layers", [](auto& v) { v.mask_stage = reference::MaskStage::ignored; }},
      {"mask_inverted", [](auto& v) { v.mask_stage = reference::MaskStage::inverted; }},
      {"mask_first_layer_only", [](auto& v) { v.mask_reach = reference::MaskReach::first_layer_only; }},
      {"mask_misses_first_layer", [](auto& v) { v.mask_reach = reference::MaskReach::not_first_layer; }},
      {"padded_average", [](auto& v) { v.pooling = reference::Pooling::mean_all; }},
      {"first_token_pooling", [](auto& v) { v.pooling = reference::Pooling::first_token; }},
      {"softmax_head", [](auto& v) { v.softmax_head = true; }},
  };
  return table;
}

at::Tensor mask_of(const kit::CaseData& data) {
  return data.inputs.count("mask") ? data.inputs.at("mask") : at::Tensor();
}

kit::Tensors reference_of(const kit::CaseData& data, const std::vector<std::string>& mistakes) {
  // Dropout is random in training mode, unless each p is 0 or 1 (a dropout_sites case).
  if (data.train && !data.dropped) return {};
  MiniEncoderVariant variant;
  for (const auto& mistake : mistakes) bends().at(mistake)(variant);
  if (data.dropped) variant.drop_embeddings = data.dropped->count("dropout") > 0;
  return {{"logits", reference::mini_encoder(data.inputs.at("tokens"), mask_of(data), data.params, data.dims.at("H"),
                                             data.dims.at("L"), variant)}};
}

// ---- distinct layers ----------------------------------------------------

// The driver names each parameter that is the very tensor of an earlier one
// ("layers.1.linear1.weight layers.0.linear1.weight"): one module registered
// under two indices.
CheckResult distinct_layers(const kit::Kit& kit, const CheckSpec& spec) {
  const auto& run = kit.input().at(spec.cases.front());
  if (!run.response.ints.count("constructed")) return kit.results().threw(spec.id, run);
  std::set<std::string> pairs;
  // "layers.1.linear1.weight" -> "layers.1": the module both belong to.
  auto module_of = [](const std::string& n) { return n.substr(0, n.find('.', n.find('.') + 1)); };
  for (const auto& fields : wire::field_lines(run.response.string_or("shared_parameters", ""))) {
    if (fields.size() == 2) pairs.insert(module_of(fields[0]) + " is the same module as " + module_of(fields[1]));
  }
  if (pairs.empty()) {
    if (!run.response.string_or("missing_parameters", "").empty()) {
      return kit.results().skip(spec.id, "not assessed: not every layer is registered (see parameters_loaded)");
    }
    return kit.results().pass(spec.id, "each layer has its own weights");
  }
  std::vector<std::string> evidence = {"constructed with n_layers = " +
                                       std::to_string(run.request.integer(wire::key::ctor("n_layers")))};
  evidence.insert(evidence.end(), pairs.begin(), pairs.end());
  return kit.results().fail(spec.id,
                            "the ModuleList holds one layer several times: one set of weights applied n_layers times "
                            "(weight tying), not a stack of n_layers layers; construct a new TransformerEncoderLayer "
                            "for each index",
                            evidence);
}

// ---- the pooling probe ----------------------------------------------------

// One layer whose sub-layers add nothing (out_proj and linear2 zero) and whose
// LayerNorms are the identity map: each token's final state is then a known
// function of its embedding, whatever the mask. The classifier is the identity
// (n_classes = d_model), so the logits are the pooled vector itself, and the
// weight of each token in it is solved for by least squares.
const char* const kPoolingProbe = "pooling_probe";
constexpr int64_t kProbeB = 3, kProbeN = 5, kProbeD = 16;

void add_pooling_probe(kit::Kit& kit, std::vector<wire::Record>& cases, at::Generator& generator) {
  CaseSpec spec{kPoolingProbe,
                {{"B", kProbeB}, {"N", kProbeN}, {"Nq", kProbeN}, {"Nk", kProbeN}, {"V", 9}, {"D", kProbeD},
                 {"H", 2}, {"F", 16}, {"L", 1}, {"C", kProbeD}, {"dropout_pct", 0}},
                {{"mask", "padding"}}};
  auto record = kit.make_case(spec, generator, 700001);
  auto zero = [&](const std::string& name) {
    auto& t = record.tensors.at(wire::key::param(name));
    t = at::zeros_like(t);
  };
  auto one = [&](const std::string& name) {
    auto& t = record.tensors.at(wire::key::param(name));
    t = at::ones_like(t);
  };
  for (const char* name : {"layers.0.self_attn.out_proj.weight", "layers.0.self_attn.out_proj.bias",
                           "layers.0.linear2.weight", "layers.0.linear2.bias", "layers.0.norm1.bias",
                           "layers.0.norm2.bias", "classifier.bias"})
    zero(name);
  one("layers.0.norm1.weight");
  one("layers.0.norm2.weight");
  record.tensors.at(wire::key::param("classifier.weight")) = at::eye(kProbeD, at::kDouble);
  record.strings["describe"] += ", one layer that adds nothing, classifier the identity (logits = pooled vector)";
  cases.push_back(std::move(record));
}

// The token weights w (B, N) with pooled[b] = sum_t w[b][t] * states[b][t]
// (least squares, for the evidence), and the largest relative residual of that fit.
std::pair<at::Tensor, double> pooling_weights(const at::Tensor& states, const at::Tensor& pooled) {
  std::vector<at::Tensor> rows;
  double residual = 0;
  for (int64_t b = 0; b < states.size(0); ++b) {
    auto basis = states[b].t();  // (D, N)
    auto w = at::linalg_pinv(basis).matmul(pooled[b]);
    residual = std::max(residual, ((basis.matmul(w) - pooled[b]).norm() / pooled[b].norm().clamp_min(1e-12))
                                      .item<double>());
    rows.push_back(w);
  }
  return {at::stack(rows), residual};
}

std::string weights_text(const at::Tensor& w, const at::Tensor& real) {
  std::string text;
  for (int64_t b = 0; b < w.size(0); ++b) {
    text += fmt::format("{}sequence {} ({} real tokens of {}): [", b ? "; " : "", b, real[b].sum().item<int64_t>(),
                        w.size(1));
    for (int64_t t = 0; t < w.size(1); ++t) text += fmt::format("{}{:.3f}", t ? ", " : "", w[b][t].item<double>());
    text += "]";
  }
  return text;
}

// A way of pooling the grader recognises: what it computes from the final
// states (B, N, D) and the real-token indicator (B, N), and what it says.
struct Pooling {
  const char* id;
  std::function<at::Tensor(const at::Tensor&, const at::Tensor&)> pool;
  const char* says;  // empty: the correct one
};

const std::vector<Pooling>& poolings() {
  static const std::vector<Pooling> table = {
      {"masked_mean", [](const at::Tensor& h, const at::Tensor& r) { return (h * r.unsqueeze(-1)).sum(1) / r.sum(1, true); },
       ""},
      {"mean_all", [](const at::Tensor& h, const at::Tensor&) { return h.mean(1); },
       "every position weighs 1/N, the padded ones included: average over the real tokens only, "
       "(h * m).sum(1) / m.sum(1)"},
      {"sum_over_n",
       [](const at::Tensor& h, const at::Tensor& r) { return (h * r.unsqueeze(-1)).sum(1) / static_cast<double>(h.size(1)); },
       "the real tokens are summed but divided by N, the padded length: divide by the number of real tokens, "
       "m.sum(1)"},
      {"masked_sum", [](const at::Tensor& h, const at::Tensor& r) { return (h * r.unsqueeze(-1)).sum(1); },
       "the real tokens' states are summed, not averaged: divide by the number of real tokens"},
      {"sum_all", [](const at::Tensor& h, const at::Tensor&) { return h.sum(1); },
       "every position is summed, padding included: average over the real tokens only"},
      {"first_token", [](const at::Tensor& h, const at::Tensor&) { return h.select(1, 0); },
       "only the first token's state is used ([CLS] pooling): the statement asks for the mean of the real tokens' "
       "states"},
      {"masked_max",
       [](const at::Tensor& h, const at::Tensor& r) {
         return std::get<0>(h.masked_fill(r.unsqueeze(-1) == 0, -1e300).max(1));
       },
       "max pooling over the real tokens: the statement asks for their mean"},
      {"max_all", [](const at::Tensor& h, const at::Tensor&) { return std::get<0>(h.max(1)); },
       "max pooling over every position, padding included: the statement asks for the mean of the real tokens"},
  };
  return table;
}

CheckResult pooling_probe(const kit::Kit& kit, const CheckSpec& spec) {
  const auto& results = kit.results();
  const auto& run = kit.input().at(kPoolingProbe);
  if (auto why = kit.not_runnable(run)) return results.skip(spec.id, "not assessed: " + *why);
  std::string why;
  auto logits = learner_tensor(run, "logits", why);
  if (!logits) return results.skip(spec.id, "not assessed: " + why);
  if (logits->dim() != 2 || logits->size(0) != kProbeB || logits->size(1) != kProbeD) {
    return results.skip(spec.id, "not assessed: the logits have shape " + shape_string(logits->sizes()) +
                                     " on the probe (see the shape check)");
  }
  auto pooled = logits->to(at::kDouble);
  if (!at::isfinite(pooled).all().item<bool>()) {
    return results.skip(spec.id, "not assessed: the logits are not finite on the probe (see the other checks)");
  }
  std::vector<std::string> evidence = {"input: " + run.describe()};
  // Probabilities instead of logits: every state has mean 0 over d_model (the
  // last LayerNorm's bias is 0), so the pooled vector is log p minus its mean.
  if ((pooled > 0).all().item<bool>() && (pooled.sum(1) - 1).abs().max().item<double>() < 1e-6) {
    pooled = pooled.log();
    pooled = pooled - pooled.mean(1, /*keepdim=*/true);
    evidence.push_back("your outputs are probabilities (each row sums to 1): the pooled vector is read through log");
  }
  const auto data = kit.data_of(run);
  const auto& mask = data.inputs.at("mask");
  const auto real = (mask != 0).to(at::kDouble);  // (B, N)
  // The token states as the correct embedding makes them, else as a known
  // embedding mistake does: the pooling is measured either way.
  std::optional<std::pair<at::Tensor, double>> fit;
  for (const char* mistake : {"", "no_embedding_scale", "no_positions"}) {
    MiniEncoderVariant variant;
    if (*mistake) bends().at(mistake)(variant);
    auto states = reference::mini_encoder_states(data.inputs.at("tokens"), mask, data.params, data.dims.at("H"),
                                                 data.dims.at("L"), variant);
    for (const auto& pooling : poolings()) {
      auto want = pooling.pool(states, real);
      if ((want - pooled).abs().max().item<double>() > 1e-5 * (1 + want.abs().max().item<double>())) continue;
      if (!*pooling.says) return results.pass(spec.id, "the pooled vector is the mean of the real tokens' states");
      return results.fail(spec.id, pooling.says, evidence);
    }
    auto candidate = pooling_weights(states, pooled);
    if (!fit || candidate.second < fit->second) fit = candidate;
  }
  if (fit->second < 1e-4) {
    evidence.push_back("each token's weight in your pooled vector: " + weights_text(fit->first, real));
    return results.fail(spec.id, "the pooled vector weighs the tokens differently from a mean over the real tokens",
                        evidence);
  }
  // Neither a known pooling nor any weighted sum of the states the grader
  // expects: what reaches the pooling already differs.
  return results.skip(spec.id,
                      "not assessed: on the probe, the token states before pooling already differ from the "
                      "reference's (see the other checks), so the pooling cannot be read off");
}

// ---- it learns ------------------------------------------------------------

// A separable task: class 0 sequences draw their tokens from {1, 2, 3}, class
// 1 from {4, 5, 6}; lengths 3 to 6, padded with token 0. 40 Adam steps (lr
// 3e-3) in float32 from the learner's own initialisation, seeded.
const char* const kFit = "learns~fit";
constexpr int64_t kFitSteps = 40;

void add_fit(kit::Kit& kit, std::vector<wire::Record>& cases, at::Generator& generator) {
  const int64_t b = 16, n = 6;
  CaseSpec spec{kFit,
                {{"B", b}, {"N", n}, {"Nq", n}, {"Nk", n}, {"V", 8}, {"D", 16}, {"H", 2}, {"F", 32}, {"L", 2},
                 {"C", 2}, {"dropout_pct", 10}},
                {{"mask", "padding"}, {"dtype", "float32"}}};
  auto record = kit.make_case(spec, generator, 600001);
  for (auto it = record.tensors.begin(); it != record.tensors.end();) {
    it = wire::key::param_name(it->first) ? record.tensors.erase(it) : std::next(it);
  }
  auto labels = at::arange(b, at::kLong) % 2;
  auto tokens = at::randint(1, 4, {b, n}, generator, at::kLong) + 3 * labels.unsqueeze(1);
  // 3, 3, 4, 4, 5, 5, 6, 6, ...: each length in both classes, so length says nothing about the class.
  auto lengths = at::div(at::arange(b, at::kLong), 2, "floor") % 4 + 3;
  auto real = at::arange(n, at::kLong).unsqueeze(0) < lengths.unsqueeze(1);
  record.tensors[wire::key::input("tokens")] = at::where(real, tokens, at::zeros_like(tokens));
  record.tensors[wire::key::input("mask")] = real;
  record.tensors["fit.labels"] = labels;
  record.strings["kind"] = "fit";
  record.ints["fit.steps"] = kFitSteps;
  record.reals["fit.lr"] = 3e-3;
  record.strings["describe"] = fmt::format(
      "16 sequences of 3 to 6 tokens (class 0: tokens 1-3, class 1: tokens 4-6), vocab 8, d_model 16, 2 heads, "
      "d_ff 32, 2 layers, dropout 0.1, float32, {} Adam steps with lr 0.003 in training mode",
      kFitSteps);
  cases.push_back(std::move(record));
}

CheckResult learns(const kit::Kit& kit, const CheckSpec& spec) {
  const auto& results = kit.results();
  const auto& run = kit.input().at(kFit);
  if (run.threw()) return results.threw(spec.id, run);
  std::string why;
  auto losses = learner_tensor(run, "losses", why);
  if (!losses) return results.skip(spec.id, "not assessed: " + why);
  auto l = losses->to(at::kDouble);
  const double first = l[0].item<double>();
  std::vector<std::string> evidence = {"task: " + run.describe()};
  if (run.response.ints.count("fit.no_graph")) {
    evidence.push_back(fmt::format("cross-entropy at step 0: {:.4f}, and it requires no gradient", first));
    return results.fail(spec.id,
                        "nothing can be trained: the loss is cut from every weight in the autograd graph (a "
                        "NoGradGuard, detach() or .data() in forward?)",
                        evidence);
  }
  if (!std::isfinite(first)) {
    return results.skip(spec.id, fmt::format("not assessed: the loss is {} from the first step: the logits on the "
                                             "training batch are not finite (see the other checks)",
                                             first));
  }
  if (!at::isfinite(l).all().item<bool>() || l.size(0) < kFitSteps) {
    evidence.push_back(fmt::format("the loss became {} at step {}", l[-1].item<double>(), l.size(0) - 1));
    return results.fail(spec.id, "training diverged: the loss is not finite (are the logits finite?)", evidence);
  }
  const double last = l.narrow(0, kFitSteps - 5, 5).mean().item<double>();
  evidence.push_back(fmt::format("cross-entropy at step 0: {:.4f}; mean of the last 5 steps: {:.4f} (ratio {:.3f})",
                                 first, last, last / first));
  if (last <= 0.5 * first) return results.pass(spec.id, evidence.back());
  return results.fail(spec.id,
                      "the loss does not fall to half its start on a task the reference design learns easily: are "
                      "all sub-modules registered (so that the optimizer sees their weights), does the loss reach "
                      "them (no detach), and are logits returned (not probabilities)?",
                      evidence);
}

}  // namespace

std::unique_ptr<Suite> make_suite(const Exercise& exercise) {
  auto suite = std::make_unique<kit::Kit>(exercise, reference_of, keys_of(bends()));
  suite->dropout_sites({"dropout"});
  suite->extra_cases(add_pooling_probe);
  suite->extra_cases(add_fit);
  suite->custom("distinct_layers", distinct_layers);
  suite->measurement("pooling_probe", pooling_probe);
  suite->custom("learns", learns);
  return suite;
}

}  // namespace grader::exercise_mini_encoder
