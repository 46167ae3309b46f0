// Parent side of exercise_sdpa: plans the cases (fresh random inputs from the
// seed), computes what the reference expects, and judges the learner's results.
#include "checks/check.h"

#include <ATen/ATen.h>
#include <ATen/CPUGeneratorImpl.h>

#include <cmath>
#include <functional>
#include <map>
#include <sstream>

#include "attention.h"

namespace grader {
namespace {

struct Config {
  int64_t batch, heads, queries, keys, d_k, d_v;
  std::string text() const {
    std::ostringstream out;
    out << "B=" << batch << " H=" << heads << " Nq=" << queries << " Nk=" << keys << " d_k=" << d_k << " d_v=" << d_v;
    return out.str();
  }
};

// The shape cases: Nq != Nk and d_v != d_k first (the case used to diagnose),
// then a single token and a single head, square, one query.
const std::vector<Config> kShapeConfigs = {
    {2, 4, 5, 7, 8, 3}, {1, 1, 1, 1, 4, 4}, {3, 2, 6, 6, 16, 16}, {2, 3, 1, 4, 8, 5}};

std::string shape_case(size_t i) { return "shape_" + std::to_string(i); }

// Each known mistake of exercise.yaml, as a bend of the reference.
struct Dims {
  double d_k, queries, d_v;
};
using Bend = std::function<void(reference::SdpaVariant&, const Dims&)>;

const std::map<std::string, Bend>& mistake_bends() {
  using reference::MaskStage;
  static const std::map<std::string, Bend> bends = {
      {"no_scaling", [](auto& v, const Dims&) { v.scale = 1.0; }},
      {"scaled_by_dk", [](auto& v, const Dims& d) { v.scale = 1.0 / d.d_k; }},
      {"scaled_by_seq_len", [](auto& v, const Dims& d) { v.scale = 1.0 / std::sqrt(d.queries); }},
      {"scaled_by_value_dim", [](auto& v, const Dims& d) { v.scale = 1.0 / std::sqrt(d.d_v); }},
      {"scale_multiplied", [](auto& v, const Dims& d) { v.scale = std::sqrt(d.d_k); }},
      {"softmax_over_queries", [](auto& v, const Dims&) { v.softmax_dim = -2; }},
      {"softmax_over_heads", [](auto& v, const Dims&) { v.softmax_dim = 1; }},
      {"key_reshaped_not_transposed", [](auto& v, const Dims&) { v.key_reshaped = true; }},
      {"mask_after_softmax", [](auto& v, const Dims&) { v.mask_stage = MaskStage::after_softmax; }},
      {"mask_inverted", [](auto& v, const Dims&) { v.mask_stage = MaskStage::inverted; }},
      {"mask_ignored", [](auto& v, const Dims&) { v.mask_stage = MaskStage::ignored; }},
      {"mask_filled_with_zero", [](auto& v, const Dims&) { v.mask_stage = MaskStage::fill_zero; }},
      {"mask_added", [](auto& v, const Dims&) { v.mask_stage = MaskStage::added; }},
      {"weights_before_softmax", [](auto& v, const Dims&) { v.weights_before_softmax = true; }},
  };
  return bends;
}

reference::SdpaVariant variant_for(const std::string& mistake, const at::Tensor& query, const at::Tensor& value) {
  reference::SdpaVariant variant;
  Dims dims{static_cast<double>(query.size(-1)), static_cast<double>(query.size(-2)),
            static_cast<double>(value.size(-1))};
  mistake_bends().at(mistake)(variant, dims);
  return variant;
}

const std::vector<std::string> kChecks = {"output_shape",
                                          "weights_shape",
                                          "weights_rows_sum_to_one",
                                          "forward_float64",
                                          "forward_float32",
                                          "output_uses_weights",
                                          "mask_padding",
                                          "mask_causal",
                                          "mask_per_head",
                                          "mask_ignores_masked_values",
                                          "softmax_stability",
                                          "gradients",
                                          "no_builtins"};

class SdpaSuite : public Suite {
 public:
  explicit SdpaSuite(const Exercise& exercise) : exercise_(exercise), results_(exercise) {
    require_implemented(exercise, kChecks, keys_of(mistake_bends()));
  }

  std::vector<wire::Record> plan(uint64_t seed) override {
    auto generator = at::make_generator<at::CPUGeneratorImpl>(seed);
    std::vector<wire::Record> cases;
    int64_t case_seed = static_cast<int64_t>(seed % 1000003);
    auto add = [&](const std::string& id, const Config& config, at::ScalarType dtype, double logit_scale = 1.0) {
      wire::Record record;
      record.strings["case"] = id;
      record.strings["describe"] = config.text() + (dtype == at::kFloat ? " float32" : " float64");
      record.ints["seed"] = case_seed++;
      auto options = at::TensorOptions().dtype(dtype);
      record.tensors["query"] =
          at::randn({config.batch, config.heads, config.queries, config.d_k}, generator, options) * logit_scale;
      record.tensors["key"] =
          at::randn({config.batch, config.heads, config.keys, config.d_k}, generator, options) * logit_scale;
      record.tensors["value"] = at::randn({config.batch, config.heads, config.keys, config.d_v}, generator, options);
      cases.push_back(record);
      return &cases.back();
    };
    for (size_t i = 0; i < kShapeConfigs.size(); ++i) add(shape_case(i), kShapeConfigs[i], at::kDouble);
    add("float32", kShapeConfigs[0], at::kFloat);

    const Config masked{2, 4, 5, 7, 8, 3};
    auto* padding = add("mask_padding", masked, at::kDouble);
    auto padding_mask = at::ones({masked.batch, 1, 1, masked.keys}, at::kBool);
    padding_mask.index_put_({0, at::indexing::Slice(), at::indexing::Slice(), at::indexing::Slice(5, 7)}, false);
    padding_mask.index_put_({1, at::indexing::Slice(), at::indexing::Slice(), at::indexing::Slice(4, 7)}, false);
    padding->tensors["mask"] = padding_mask;
    padding->strings["describe"] += ", padding mask (B, 1, 1, Nk) bool";

    // Same inputs, but huge values behind the masked keys: the output must not move.
    auto changed = *padding;
    changed.strings["case"] = "mask_padding_changed_values";
    changed.ints["seed"] = case_seed++;
    auto noise = at::randn(changed.tensors["value"].sizes(), generator, at::kDouble) * 1000.0;
    changed.tensors["value"] = at::where(padding_mask.transpose(-2, -1), changed.tensors["value"], noise);
    changed.strings["describe"] += ", values at masked keys replaced";
    cases.push_back(changed);

    const Config causal{2, 2, 6, 6, 8, 8};
    auto* causal_case = add("mask_causal", causal, at::kDouble);
    causal_case->tensors["mask"] = at::ones({causal.queries, causal.keys}, at::kLong).tril();
    causal_case->strings["describe"] += ", causal mask (Nq, Nk) int64";

    const Config per_head{2, 3, 4, 5, 8, 3};
    auto* head_case = add("mask_per_head", per_head, at::kDouble);
    auto head_mask = at::rand({per_head.batch, per_head.heads, per_head.queries, per_head.keys}, generator) > 0.4;
    head_mask.select(-1, 0).fill_(true);  // every query keeps at least one key
    head_case->tensors["mask"] = head_mask;
    head_case->strings["describe"] += ", per-head mask (B, H, Nq, Nk) bool";

    auto* stable = add("stability", {1, 2, 4, 6, 8, 8}, at::kDouble, /*logit_scale=*/40.0);
    stable->strings["describe"] += ", logits in the thousands";

    auto* grads = add("gradients", masked, at::kDouble);
    grads->tensors["mask"] = padding_mask;
    grads->ints["grad"] = 1;
    grads->tensors["grad_output"] =
        at::randn({masked.batch, masked.heads, masked.queries, masked.d_v}, generator, at::kDouble);
    grads->strings["describe"] += ", padding mask, backward";
    return cases;
  }

  std::vector<CheckResult> judge(const JudgeInput& input) override {
    input_ = &input;
    std::vector<CheckResult> out;
    out.push_back(output_shape());
    out.push_back(weights_shape());
    out.push_back(weights_rows_sum_to_one());
    out.push_back(forward_float64());
    out.push_back(forward_float32());
    out.push_back(output_uses_weights());
    out.push_back(masked("mask_padding", "mask_padding"));
    out.push_back(masked("mask_causal", "mask_causal"));
    out.push_back(masked("mask_per_head", "mask_per_head"));
    out.push_back(mask_ignores_masked_values());
    out.push_back(softmax_stability());
    out.push_back(gradients());
    out.push_back(check_no_builtins(results_, input));
    return out;
  }

 private:
  static at::Tensor mask_of(const CaseRun& run) {
    return run.request.has_tensor("mask") ? run.request.tensor("mask") : at::Tensor();
  }

  // Reference (output, weights) for a case, in float64.
  static std::tuple<at::Tensor, at::Tensor> expected(const CaseRun& run, const reference::SdpaVariant& variant = {}) {
    const auto& r = run.request;
    return reference::scaled_dot_product_attention(r.tensor("query").to(at::kDouble), r.tensor("key").to(at::kDouble),
                                                   r.tensor("value").to(at::kDouble), mask_of(run), variant);
  }

  // Compares output and weights with the reference; on a mismatch, names the
  // known mistake the learner's results match, if any.
  std::optional<CheckResult> mismatch(const std::string& check, const CaseRun& run, const Tolerance& tolerance) {
    std::string why;
    auto output = learner_tensor(run, "output", why);
    if (!output) return results_.fail(check, why + " (" + run.describe() + ")");
    auto weights = learner_tensor(run, "weights", why);
    if (!weights) return results_.fail(check, why + " (" + run.describe() + ")");
    auto [want_output, want_weights] = expected(run);
    auto output_cmp = compare(want_output, *output, tolerance);
    auto weights_cmp = compare(want_weights, *weights, tolerance);
    if (output_cmp.ok && weights_cmp.ok) return std::nullopt;
    std::vector<std::string> evidence = {"input: " + run.describe()};
    if (!output_cmp.ok) evidence.push_back("output: " + output_cmp.detail);
    if (!weights_cmp.ok) evidence.push_back("attention weights: " + weights_cmp.detail);
    evidence.push_back(input_->replay_hint());
    auto replay = [&](const std::string& mistake) {
      auto [o, w] = expected(run, variant_for(mistake, run.request.tensor("query"), run.request.tensor("value")));
      return std::map<std::string, at::Tensor>{{"output", o}, {"weights", w}};
    };
    if (auto mistake = diagnose(exercise_, {{"output", *output}, {"weights", *weights}}, replay, tolerance)) {
      return results_.fail_with_mistake(check, *mistake, evidence);
    }
    return results_.fail(check, "the results differ from the reference", evidence);
  }

  CheckResult shape_check(const std::string& check, const std::string& name,
                          const std::function<std::vector<int64_t>(const Config&)>& want) {
    std::vector<std::string> evidence;
    for (size_t i = 0; i < kShapeConfigs.size(); ++i) {
      const auto& run = input_->at(shape_case(i));
      if (run.threw()) return results_.threw(check, run);
      std::string why;
      auto tensor = learner_tensor(run, name, why);
      if (!tensor) return results_.fail(check, why + " (" + run.describe() + ")");
      auto expected_shape = want(kShapeConfigs[i]);
      if (tensor->sizes() != at::IntArrayRef(expected_shape)) {
        evidence.push_back(run.describe() + ": got " + shape_string(tensor->sizes()) + ", expected " +
                           shape_string(expected_shape));
      }
    }
    if (!evidence.empty()) return results_.fail(check, "the " + name + " has the wrong shape", evidence);
    return results_.pass(check, "correct " + name + " shape in every configuration");
  }

  CheckResult output_shape() {
    return shape_check("output_shape", "output", [](const Config& c) {
      return std::vector<int64_t>{c.batch, c.heads, c.queries, c.d_v};
    });
  }

  CheckResult weights_shape() {
    return shape_check("weights_shape", "weights", [](const Config& c) {
      return std::vector<int64_t>{c.batch, c.heads, c.queries, c.keys};
    });
  }

  CheckResult weights_rows_sum_to_one() {
    const auto& run = input_->at(shape_case(0));
    if (run.threw()) return results_.threw("weights_rows_sum_to_one", run);
    std::string why;
    auto weights = learner_tensor(run, "weights", why);
    if (!weights) return results_.fail("weights_rows_sum_to_one", why);
    const auto& c = kShapeConfigs[0];
    if (weights->sizes() != at::IntArrayRef({c.batch, c.heads, c.queries, c.keys})) {
      return results_.skip("weights_rows_sum_to_one", "not assessed: the weights have the wrong shape");
    }
    auto w = weights->to(at::kDouble);
    auto row_sums = w.sum(-1);
    auto cmp = compare(at::ones_like(row_sums), row_sums, {0, 1e-6});
    bool negative = (w < 0).any().item<bool>();
    if (cmp.ok && !negative) return results_.pass("weights_rows_sum_to_one", "every row is a probability distribution");
    std::vector<std::string> evidence = {"input: " + run.describe(), "row sums: " + cmp.detail};
    if (negative) evidence.push_back("some weights are negative");
    if (auto failure = mismatch("weights_rows_sum_to_one", run, exercise_.tolerance("float64"))) {
      if (!failure->mistake.empty()) {
        failure->evidence = evidence;
        return *failure;
      }
    }
    return results_.fail("weights_rows_sum_to_one",
                         "the weights of each query do not form a distribution over the keys (softmax over dim -1)",
                         evidence);
  }

  CheckResult forward_float64() {
    const auto tolerance = exercise_.tolerance("float64");
    for (size_t i = 0; i < kShapeConfigs.size(); ++i) {
      if (auto failure = mismatch("forward_float64", input_->at(shape_case(i)), tolerance)) return *failure;
    }
    return results_.pass("forward_float64",
                         "matches the reference in " + std::to_string(kShapeConfigs.size()) + " configurations");
  }

  CheckResult forward_float32() {
    const auto& run = input_->at("float32");
    if (run.threw()) return results_.threw("forward_float32", run);
    for (const char* name : {"output", "weights"}) {
      auto dtype = run.response.string_or(std::string(name) + ".dtype", "");
      if (dtype != "Float") {
        return results_.fail("forward_float32", std::string("float32 inputs gave a ") + name + " of dtype " + dtype +
                                                    "; keep the input's dtype (do not hard-code one)");
      }
    }
    if (auto failure = mismatch("forward_float32", run, exercise_.tolerance("float32"))) return *failure;
    return results_.pass("forward_float32", "float32 results match the reference within float32 tolerance");
  }

  CheckResult output_uses_weights() {
    const auto& run = input_->at(shape_case(0));
    if (run.threw()) return results_.threw("output_uses_weights", run);
    std::string why;
    auto output = learner_tensor(run, "output", why);
    auto weights = learner_tensor(run, "weights", why);
    if (!output || !weights) return results_.fail("output_uses_weights", why);
    const auto& c = kShapeConfigs[0];
    if (weights->sizes() != at::IntArrayRef({c.batch, c.heads, c.queries, c.keys})) {
      return results_.skip("output_uses_weights", "not assessed: the weights have the wrong shape");
    }
    auto implied = at::matmul(weights->to(at::kDouble), run.request.tensor("value"));
    auto cmp = compare(implied, *output, exercise_.tolerance("float64"));
    if (cmp.ok) return results_.pass("output_uses_weights", "the returned weights produce the returned output");
    return results_.fail("output_uses_weights",
                         "the returned weights are not the ones the output was computed with: return the "
                         "post-softmax weights you multiply value by",
                         {"input: " + run.describe(), "weights @ value vs output: " + cmp.detail});
  }

  CheckResult masked(const std::string& check, const std::string& case_id) {
    const auto& run = input_->at(case_id);
    if (run.threw()) return results_.threw(check, run);
    if (auto failure = mismatch(check, run, exercise_.tolerance("float64"))) return *failure;
    // Matching within tolerance is not enough: masked weights must be exactly 0.
    std::string why;
    auto weights = learner_tensor(run, "weights", why)->to(at::kDouble);
    auto hidden = (mask_of(run) == 0).expand_as(weights);
    auto leaked = weights.masked_select(hidden).ne(0).sum().item<int64_t>();
    if (leaked > 0) {
      return results_.fail(check, "masked positions must get exactly zero weight (fill with -inf before the softmax)",
                           {"input: " + run.describe(), std::to_string(leaked) + " masked weights are not exactly 0"});
    }
    return results_.pass(check, "masked keys get exactly zero weight and the results match the reference");
  }

  CheckResult mask_ignores_masked_values() {
    const auto& base = input_->at("mask_padding");
    const auto& changed = input_->at("mask_padding_changed_values");
    for (const auto* run : {&base, &changed}) {
      if (run->threw()) return results_.threw("mask_ignores_masked_values", *run);
    }
    std::string why;
    auto first = learner_tensor(base, "output", why);
    auto second = learner_tensor(changed, "output", why);
    if (!first || !second) return results_.fail("mask_ignores_masked_values", why);
    auto cmp = compare(*first, *second, exercise_.tolerance("float64"));
    if (cmp.ok) return results_.pass("mask_ignores_masked_values", "values behind masked keys have no influence");
    return results_.fail("mask_ignores_masked_values",
                         "changing the values at masked keys changed the output: masked keys still contribute",
                         {"input: " + changed.describe(), "output before vs after: " + cmp.detail});
  }

  CheckResult softmax_stability() {
    const auto& run = input_->at("stability");
    if (run.threw()) return results_.threw("softmax_stability", run);
    std::string why;
    auto output = learner_tensor(run, "output", why);
    if (!output) return results_.fail("softmax_stability", why);
    if (!at::isfinite(*output).all().item<bool>()) {
      return results_.fail("softmax_stability",
                           "large logits produced inf or NaN: use a stable softmax (torch::softmax subtracts the row "
                           "maximum before exp)",
                           {"input: " + run.describe()});
    }
    if (auto failure = mismatch("softmax_stability", run, exercise_.tolerance("float64"))) return *failure;
    return results_.pass("softmax_stability", "finite and correct for logits in the thousands");
  }

  CheckResult gradients() {
    const auto& run = input_->at("gradients");
    if (run.threw()) return results_.threw("gradients", run);
    if (mismatch("gradients", run, exercise_.tolerance("float64"))) {
      return results_.skip("gradients", "not assessed: the forward results are wrong for this input (" +
                                            run.describe() + "), so gradients cannot be compared");
    }
    const auto& r = run.request;
    auto query = r.tensor("query").clone().requires_grad_(true);
    auto key = r.tensor("key").clone().requires_grad_(true);
    auto value = r.tensor("value").clone().requires_grad_(true);
    auto [output, weights] = reference::scaled_dot_product_attention(query, key, value, mask_of(run));
    output.backward(r.tensor("grad_output"));
    std::vector<std::string> evidence;
    for (const auto& [name, want] :
         {std::pair<std::string, at::Tensor>{"query", query.grad()}, {"key", key.grad()}, {"value", value.grad()}}) {
      std::string why;
      auto got = learner_tensor(run, "grad." + name, why);
      if (!got) {
        evidence.push_back(name + ": no gradient reached it");
        continue;
      }
      auto cmp = compare(want, *got, exercise_.tolerance("float64"));
      if (!cmp.ok) evidence.push_back(name + " gradient: " + cmp.detail);
    }
    if (evidence.empty()) return results_.pass("gradients", "gradients of query, key and value match the reference");
    evidence.insert(evidence.begin(), "input: " + run.describe());
    return results_.fail("gradients",
                         "the gradients are wrong or missing: something detaches the graph or is not differentiable",
                         evidence);
  }

  const Exercise& exercise_;
  ResultBuilder results_;
  const JudgeInput* input_ = nullptr;
};

}  // namespace

std::unique_ptr<Suite> make_suite_exercise_sdpa(const Exercise& exercise) { return std::make_unique<SdpaSuite>(exercise); }

}  // namespace grader
