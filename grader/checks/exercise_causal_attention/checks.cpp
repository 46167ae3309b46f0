// Parent side of exercise_causal_attention: the reference with its replayable
// mistakes, the attention probe, and three checks of causality itself: the
// mask pattern measured on the probe, earlier outputs under changed later
// tokens, and the gradients of earlier outputs at later tokens. Everything
// else is exercise.yaml and the kit.
#include <ATen/ATen.h>
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <map>

#include "attention.h"
#include "checks/kit/kit.h"
#include "base/errors.h"

namespace grader::exercise_causal_attention {
namespace {

using reference::MaskStage;

// A causal variant: which keys the mask keeps (j <= i + diagonal), and the sdpa bends.
struct Variant {
  reference::SdpaVariant sdpa;
  int64_t diagonal = 0;
};
using Bend = std::function<void(Variant&, const kit::Dims&)>;

const std::map<std::string, Bend>& bends() {
  static const std::map<std::string, Bend> table = {
      {"no_causal_mask", [](auto& v, const auto&) { v.sdpa.mask_stage = MaskStage::ignored; }},
      {"diagonal_hidden", [](auto& v, const auto&) { v.diagonal = -1; }},
      {"sees_next_token", [](auto& v, const auto&) { v.diagonal = 1; }},
      {"mask_inverted", [](auto& v, const auto&) { v.sdpa.mask_stage = MaskStage::inverted; }},
      {"mask_after_softmax", [](auto& v, const auto&) { v.sdpa.mask_stage = MaskStage::after_softmax; }},
      {"mask_filled_with_zero", [](auto& v, const auto&) { v.sdpa.mask_stage = MaskStage::fill_zero; }},
      {"no_scaling", [](auto& v, const auto&) { v.sdpa.scale = 1.0; }},
      {"float32_scale", [](auto& v, const auto& d) { v.sdpa.scale = kit::float32_inverse_sqrt(d.at("d_k")); }},
      {"float32_sqrt", [](auto& v, const auto& d) { v.sdpa.scale = kit::inverse_of_float32_sqrt(d.at("d_k")); }},
      {"scaled_by_dk", [](auto& v, const auto& d) { v.sdpa.scale = 1.0 / static_cast<double>(d.at("d_k")); }},
      {"softmax_over_queries", [](auto& v, const auto&) { v.sdpa.softmax_dim = -2; }},
      {"weights_before_softmax", [](auto& v, const auto&) { v.sdpa.weights_before_softmax = true; }},
  };
  return table;
}

// The keys query i may see: j <= i (+ the variant's offset), as a (N, N) bool matrix.
at::Tensor visible(int64_t n, int64_t diagonal = 0) { return at::ones({n, n}, at::kBool).tril(diagonal); }

kit::Tensors reference_of(const kit::CaseData& data, const std::vector<std::string>& mistakes) {
  Variant variant;
  for (const auto& mistake : mistakes) bends().at(mistake)(variant, data.dims);
  const auto& query = data.inputs.at("query");
  auto [output, weights] = reference::scaled_dot_product_attention(
      query, data.inputs.at("key"), data.inputs.at("value"), visible(query.size(-2), variant.diagonal), variant.sdpa);
  return {{"output", output}, {"weights", weights}};
}

// Every query is a_i e_0 and every key b_j e_0, so q.k = a_i b_j; the
// weights come back as they are.
constexpr int64_t kB = 2, kH = 2, kN = 5, kDk = 8, kDv = 6;

kit::AttentionProbe probe() {
  kit::AttentionProbe p;
  p.dims = {{"B", kB}, {"H", kH}, {"N", kN}, {"Nq", kN}, {"Nk", kN}, {"d_k", kDk}, {"d_v", kDv}};
  p.head_dim = "d_k";
  p.direct = true;
  p.causal = true;
  p.quantities = {{"d_k", "d_k"}, {"d_v", "d_v"}, {"N", "N"}, {"H", "H"}};
  p.design = [](wire::Record& r, const at::Tensor& a, const at::Tensor& b, const at::Tensor&) {
    auto query = at::zeros({kB, kH, kN, kDk}, at::kDouble), key = at::zeros({kB, kH, kN, kDk}, at::kDouble);
    query.select(-1, 0).copy_(a.unsqueeze(1).expand({kB, kH, kN}));
    key.select(-1, 0).copy_(b.unsqueeze(1).expand({kB, kH, kN}));
    r.tensors[wire::key::input("query")] = query;
    r.tensors[wire::key::input("key")] = key;
    r.tensors[wire::key::input("value")] = at::arange(kB * kH * kN * kDv, at::kDouble).reshape({kB, kH, kN, kDv}).sin();
  };
  p.read = [](const CaseRun& run, std::string& why) -> std::optional<at::Tensor> {
    auto weights = learner_tensor(run, "weights", why);
    if (!weights) return std::nullopt;
    if (weights->sizes() != at::IntArrayRef({kB, kH, kN, kN})) {
      why = "the weights have shape " + shape_string(weights->sizes()) + " on the probe";
      return std::nullopt;
    }
    return weights;
  };
  return p;
}

std::string where_of(const at::Tensor& mask) {
  auto index = mask.nonzero();
  if (index.size(0) == 0) return "";
  auto first = index[0];
  return fmt::format("query {}, key {}", first[-2].item<int64_t>(), first[-1].item<int64_t>());
}

// The weights on the probe, read as a pattern: which keys each query gives weight.
CheckResult causal_pattern(const kit::Kit& kit, const CheckSpec& spec) {
  const auto& results = kit.results();
  const auto& run = kit.input().at(kit::probe_case("scale"));
  if (auto why = kit.not_runnable(run)) return kit.explain(spec.id, kit::probe_case("scale"));
  std::string why;
  auto read = probe().read(run, why);
  if (!read) return results.skip(spec.id, "not assessed: " + why);
  auto w = read->to(at::kDouble);
  const auto future = at::ones({kN, kN}, at::kBool).triu(1).expand_as(w);
  const auto diagonal = at::eye(kN, at::kBool).expand_as(w);
  const auto past = at::ones({kN, kN}, at::kBool).tril(-1).expand_as(w);
  const auto next = at::eye(kN, kN, at::kBool).roll(1, 1).triu(1).expand_as(w);  // j == i + 1
  auto count = [](const at::Tensor& t) { return t.sum().item<int64_t>(); };
  std::vector<std::string> evidence = {"input: " + run.describe()};
  auto nan = at::isnan(w);
  auto nonzero = (w != 0) & ~nan;
  auto rows_sum_to_one = ((w.sum(-1) - 1).abs() < 1e-6).all().item<bool>();
  auto columns_sum_to_one = ((w.sum(-2) - 1).abs() < 1e-6).all().item<bool>();
  auto fail = [&](const std::string& focus, const std::string& message) {
    auto result = results.fail(spec.id, message, evidence);
    result.focus_point = focus;
    return result;
  };
  const bool diagonal_seen = count(nonzero & diagonal) == count(diagonal);
  if (count(nan) > 0) {
    auto rows = nan.any(-1).any(0).any(0);  // (N): the query rows with a NaN
    std::vector<int64_t> which;
    for (int64_t i = 0; i < kN; ++i) {
      if (rows[i].item<bool>()) which.push_back(i);
    }
    evidence.push_back(fmt::format("NaN weights in the rows of queries {}", fmt::join(which, ", ")));
    if (count(nan) == w.numel()) {
      return fail("causal_mask",
                  "every weight is NaN, visible keys included: the scores become NaN before the softmax, which "
                  "happens when a bias is built by multiplying a 0/1 matrix by -inf (0 * -inf is NaN); build it "
                  "with masked_fill, or full(-inf).triu(1), so that visible scores stay untouched");
    }
    if (rows[0].item<bool>() && count(nonzero & diagonal) == 0) {
      return fail("diagonal",
                  "the first token's weights are NaN and no token gives weight to itself: your mask hides the "
                  "diagonal too, so token 0 has no key left; a token must see itself (hide j > i only: triu(1))");
    }
    if (rows[kN - 1].item<bool>() && count(nonzero & past) == 0) {
      return fail("causal_mask",
                  "the mask is the wrong way round: tokens give weight only to later tokens and the last token, "
                  "which has none, gets NaN; hide the keys above the diagonal (j > i), not below it");
    }
    return fail("causal_mask",
                "some rows of weights are NaN: every query must keep at least its own key, so no row is all -inf");
  }
  if (count(nonzero & future) == 0) {
    if (!diagonal_seen) {
      evidence.push_back(fmt::format("{} of {} diagonal weights are 0", count(~nonzero & diagonal), count(diagonal)));
      return fail("diagonal",
                  "tokens give no weight to themselves: your mask hides the diagonal; it must hide only "
                  "the keys after each query (j > i)");
    }
    if (!rows_sum_to_one && !columns_sum_to_one) {
      evidence.push_back(fmt::format("row sums range from {:.4g} to {:.4g}", w.sum(-1).min().item<double>(),
                                     w.sum(-1).max().item<double>()));
      return fail("causal_mask",
                  "later keys get zero weight but the rows no longer sum to 1: the weights were zeroed after a "
                  "softmax over all keys; mask the scores with -inf before the softmax");
    }
    return results.pass(spec.id, std::string("later keys get exactly zero weight and every token sees itself") +
                                     (rows_sum_to_one ? "" : " (the rows do not sum to 1: see the softmax check)"));
  }
  const auto leaking = nonzero & future;
  evidence.push_back(fmt::format("{} of {} weights on later keys are not 0 (largest {:.3g}, first at {})",
                                 count(leaking), count(future), w.masked_select(leaking).abs().max().item<double>(),
                                 where_of(leaking)));
  if (count(leaking) == count(nonzero & next) && count(leaking & ~next) == 0 && count(next) > 0) {
    return fail("diagonal",
                "each token also gives weight to the next one (key i + 1) and to no later key: the mask is off by "
                "one (tril(1) keeps the first superdiagonal); keep j <= i exactly");
  }
  if (count(nonzero & past) == 0 && count(past) > 0) {
    return fail("causal_mask",
                "the mask is the wrong way round: tokens give weight to later tokens and none to earlier ones; "
                "hide the keys above the diagonal (j > i)");
  }
  if (count(leaking) == count(future)) {
    return fail("causal_mask",
                "every later key gets weight: there is no causal mask in effect (or it is filled with a value "
                "that does not hide anything); scores of keys j > i must become -inf before the softmax");
  }
  return fail("causal_mask",
              "later keys must get exactly zero weight (fill their scores with -inf before the softmax)");
}

// Twins of a case whose tokens from position t = N / 2 on are redrawn (query,
// key and value alike), and of the backward case with the gradient of the
// outputs at those positions set to 0.
std::string later_case(const std::string& id) { return id + "~later_tokens_changed"; }
std::string earlier_gradient_case(const std::string& id) { return id + "~earlier_outputs_only"; }
int64_t split_of(int64_t n) { return std::max<int64_t>(1, n / 2); }

void add_causality_cases(kit::Kit& kit, std::vector<wire::Record>& cases, at::Generator& generator) {
  std::vector<wire::Record> twins;
  for (const auto& spec : kit.exercise().checks) {
    for (const auto& id : spec.cases) {
      if (spec.kind != "later_tokens_changed" && spec.kind != "gradients_of_earlier_outputs") continue;
      auto twin = kit::planned_case(cases, id, "check '" + spec.id + "'");
      const auto n = twin.tensor(wire::key::input("query")).size(-2), t = split_of(n);
      if (spec.kind == "later_tokens_changed") {
        twin.strings["case"] = later_case(id);
        twin.strings["describe"] += fmt::format(", tokens {}..{} redrawn", t, n - 1);
        twin.tensors.erase("grad_output");
        for (const auto& name : {wire::key::input("query"), wire::key::input("key"), wire::key::input("value")}) {
          auto tensor = twin.tensor(name).clone();
          auto later = tensor.narrow(-2, t, n - t);
          later.copy_(at::randn(later.sizes(), generator, at::kDouble).to(later.scalar_type()) * 3);
          twin.tensors[name] = tensor;
        }
      } else {
        if (!twin.has_tensor("grad_output")) {
          throw ConfigError("check '" + spec.id + "' needs case '" + id +
                            "' to run backward (a gradients check on it)");
        }
        twin.strings["case"] = earlier_gradient_case(id);
        twin.strings["describe"] += fmt::format(", gradient only from the outputs at tokens 0..{}", t - 1);
        auto grad = twin.tensor("grad_output").clone();
        grad.narrow(-2, t, n - t).zero_();
        twin.tensors["grad_output"] = grad;
      }
      twin.ints["seed"] += 500000;
      twins.push_back(std::move(twin));
    }
  }
  for (auto& twin : twins) cases.push_back(std::move(twin));
}

CheckResult later_tokens_changed(const kit::Kit& kit, const CheckSpec& spec) {
  const auto& results = kit.results();
  const auto id = spec.cases.front();
  const auto& base = kit.input().at(id);
  const auto& changed = kit.input().at(later_case(id));
  for (const auto* run : {&base, &changed}) {
    if (kit.not_runnable(*run)) return kit.explain(spec.id, run == &base ? id : later_case(id));
  }
  const auto n = base.request.tensor(wire::key::input("query")).size(-2), t = split_of(n);
  // The reference's earlier outputs do not move at all: the yardstick is exact.
  auto expected_before = kit.expected(base), expected_after = kit.expected(changed);
  std::vector<std::string> evidence = {"input: " + changed.describe()};
  double most = 0;
  std::string where;
  for (const auto& [name, want] : expected_before) {
    if (!want.narrow(-2, 0, t).equal(expected_after.at(name).narrow(-2, 0, t))) {
      throw GraderFault("the reference's earlier " + name + " moved when only later tokens changed");
    }
    std::string why;
    auto before = learner_tensor(base, name, why), after = learner_tensor(changed, name, why);
    if (!before || !after) return results.skip(spec.id, "not assessed: " + why);
    if (before->dim() < 2 || before->sizes() != after->sizes() || before->size(-2) != n) {
      return results.skip(spec.id, "not assessed: the " + name + " has shape " + shape_string(before->sizes()) +
                                       " (see the shape checks)");
    }
    auto a = after->narrow(-2, 0, t).to(at::kDouble), b = before->narrow(-2, 0, t).to(at::kDouble);
    // NaN on both sides did not move; NaN on one side moved infinitely far.
    auto early = at::where(at::isnan(a) & at::isnan(b), at::zeros_like(a), (a - b).abs());
    early = at::nan_to_num(early, std::numeric_limits<double>::infinity());
    const double change = early.max().item<double>();
    if (change > most) {
      most = change;
      auto at_max = early.flatten().argmax().item<int64_t>();
      auto position = (at_max / early.size(-1)) % t;
      where = fmt::format("your {} at token {}", name, position);
    }
  }
  if (most == 0) {
    return results.pass(spec.id, fmt::format("with tokens {}..{} changed, every output and weight of tokens 0..{} "
                                             "stayed exactly the same",
                                             t, n - 1, t - 1));
  }
  evidence.push_back(fmt::format("{} moved by {:.3g} when only tokens {}..{} changed", where, most, t, n - 1));
  std::string message =
      "information flows from later tokens into earlier outputs: changing only the tokens after "
      "position " +
      std::to_string(t - 1) + " changed earlier results";
  if (most < 1e-9) {
    message +=
        " (by a rounding-sized amount, but not zero: the later tokens still enter the computation of "
        "earlier ones, for example through a softmax's normaliser before the mask is applied)";
  }
  evidence.push_back(kit.input().replay_hint());
  return results.fail(spec.id, message, evidence);
}

CheckResult gradients_of_earlier_outputs(const kit::Kit& kit, const CheckSpec& spec) {
  const auto& results = kit.results();
  const auto id = earlier_gradient_case(spec.cases.front());
  const auto& run = kit.input().at(id);
  if (kit.not_runnable(run)) return kit.explain(spec.id, spec.cases.front());
  const auto n = run.request.tensor(wire::key::input("query")).size(-2), t = split_of(n);
  std::vector<std::string> evidence = {"input: " + run.describe()};
  std::vector<std::string> reached;
  for (const char* name : {"query", "key", "value"}) {
    std::string why;
    auto grad = learner_tensor(run, wire::key::grad_input(name), why);
    if (!grad) return results.skip(spec.id, "not assessed: no gradient of " + std::string(name) + " came back");
    if (grad->dim() < 2 || grad->size(-2) != n) return results.skip(spec.id, "not assessed: unexpected gradient shape");
    auto later =
        at::nan_to_num(grad->narrow(-2, t, n - t).to(at::kDouble).abs(), std::numeric_limits<double>::infinity());
    const double most = later.max().item<double>();
    if (most != 0) {
      reached.push_back(name);
      evidence.push_back(fmt::format("the gradient of {} at tokens {}..{} reaches {:.3g}", name, t, n - 1, most));
    }
  }
  if (reached.empty()) {
    return results.pass(spec.id, fmt::format("the outputs of tokens 0..{} send exactly zero gradient to tokens {}..{}",
                                             t - 1, t, n - 1));
  }
  return results.fail(spec.id,
                      fmt::format("the outputs of tokens 0..{} send gradient to later tokens ({}): in training the "
                                  "model would learn to use the future; later keys must be cut off before the "
                                  "softmax (their weight exactly 0)",
                                  t - 1, fmt::join(reached, ", ")),
                      evidence);
}

// On long inputs (and narrow dtypes) the weights of later keys must be exactly
// 0: a tolerance would hide one leaking key among hundreds.
CheckResult future_weights_zero(const kit::Kit& kit, const CheckSpec& spec) {
  const auto& results = kit.results();
  for (const auto& id : spec.cases) {
    const auto& run = kit.input().at(id);
    if (kit.not_runnable(run)) return kit.explain(spec.id, id);
    std::string why;
    auto weights = learner_tensor(run, "weights", why);
    if (!weights) return results.fail(spec.id, why);
    const auto n = run.request.tensor(wire::key::input("query")).size(-2);
    if (weights->dim() != 4 || weights->size(-1) != n || weights->size(-2) != n) {
      return results.skip(spec.id, "not assessed: the weights have shape " + shape_string(weights->sizes()));
    }
    auto later = at::ones({n, n}, at::kBool).triu(1).expand_as(*weights);
    auto w = weights->to(at::kDouble);
    auto leaking = (w != 0) & ~at::isnan(w) & later;  // NaN: the other checks say why
    const auto count = leaking.sum().item<int64_t>();
    if (count > 0) {
      auto first = leaking.nonzero()[0];
      const auto query = first[-2].item<int64_t>(), key = first[-1].item<int64_t>();
      std::string message =
          "on a long input some later keys get weight: the causal mask is not exact at every position";
      const auto dtype = run.request.string_or("dtype", "float64");
      if (query >= 256 && (dtype == "bfloat16" || dtype == "float16")) {
        message += "; the first leak is past position 256, where " + dtype +
                   " no longer holds every integer: build positions and masks as integers (kLong) or booleans, "
                   "not in the inputs' floating dtype";
      }
      return results.fail(
          spec.id, message,
          {"input: " + run.describe(),
           fmt::format("{} weights above the diagonal are not 0; the first: query {}, key {}", count, query, key)});
    }
  }
  return results.pass(spec.id, "every weight above the diagonal is exactly 0, at every position");
}

}  // namespace

std::unique_ptr<Suite> make_suite(const Exercise& exercise) {
  auto suite = std::make_unique<kit::Kit>(exercise, reference_of, keys_of(bends()));
  suite->probe(probe());
  suite->extra_cases(add_causality_cases);
  suite->custom("causal_pattern", causal_pattern);
  suite->custom("future_weights_zero", future_weights_zero);
  suite->custom("later_tokens_changed", later_tokens_changed);
  suite->custom("gradients_of_earlier_outputs", gradients_of_earlier_outputs);
  return suite;
}

}  // namespace grader::exercise_causal_attention
