// Parent side of exercise_mhsa: plans the cases (fresh random inputs and
// weights from the seed), computes what the reference expects, and judges the
// learner's results.
#include "checks/check.h"

#include <ATen/ATen.h>
#include <ATen/CPUGeneratorImpl.h>

#include <cmath>
#include <functional>
#include <map>
#include <sstream>

#include "multi_head_attention.h"
#include "runner/op_recorder.h"

namespace grader {
namespace {

struct Config {
  int64_t batch, tokens, dim, heads;
  std::string text() const {
    std::ostringstream out;
    out << "B=" << batch << " N=" << tokens << " D=" << dim << " H=" << heads;
    return out.str();
  }
};

// The first configuration is used for diagnosis: sqrt(D), head_dim and
// sqrt(head_dim) all differ there, so every scaling mistake is distinguishable.
const std::vector<Config> kForwardConfigs = {{2, 5, 24, 4}, {2, 1, 8, 2}, {2, 4, 6, 1}, {1, 3, 4, 4}};
const Config kLoopFew{1, 4, 16, 2};
const Config kLoopMany{1, 4, 16, 8};
// The dropout probe: head_dim (12) > N (8) so each head's values can be one-hot tokens.
const Config kProbe{16, 8, 24, 2};
constexpr double kProbeDropout = 0.3;
constexpr double kEvalDropout = 0.5;

std::string forward_case(size_t i) { return "forward_" + std::to_string(i); }

const std::vector<std::string> kChecks = {"registered_names",
                                          "dropout_probability",
                                          "rejects_indivisible_dim",
                                          "output_shape",
                                          "forward_float64",
                                          "forward_float32",
                                          "no_head_loop",
                                          "dropout_inactive_in_eval",
                                          "dropout_on_attention_weights",
                                          "gradients",
                                          "no_builtins"};

// Each known mistake of exercise.yaml, as a bend of the reference.
using Bend = std::function<void(reference::MhsaVariant&, double dim, double head_dim)>;

const std::map<std::string, Bend>& mistake_bends() {
  using reference::HeadSplit;
  static const std::map<std::string, Bend> bends = {
      {"no_scaling", [](auto& v, double, double) { v.attention.scale = 1.0; }},
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
  return bends;
}

reference::MhsaVariant variant_for(const std::string& mistake, int64_t dim, int64_t heads) {
  reference::MhsaVariant variant;
  mistake_bends().at(mistake)(variant, static_cast<double>(dim), static_cast<double>(dim / heads));
  return variant;
}

int64_t matmul_like_ops(const CaseRun& run) {
  int64_t total = 0;
  for (const auto& [op, count] : op_counts(run.response)) {
    if (is_matrix_product(op) || op == "aten::softmax" || op == "aten::_softmax" || op == "aten::mul" ||
        op == "aten::div") {
      total += count;
    }
  }
  return total;
}

class MhsaSuite : public Suite {
 public:
  explicit MhsaSuite(const Exercise& exercise) : exercise_(exercise), results_(exercise) {
    require_implemented(exercise, kChecks, keys_of(mistake_bends()));
  }

  std::vector<wire::Record> plan(uint64_t seed) override {
    auto generator = at::make_generator<at::CPUGeneratorImpl>(seed);
    std::vector<wire::Record> cases;
    int64_t case_seed = static_cast<int64_t>(seed % 1000003);
    auto add = [&](const std::string& id, const Config& config, double dropout, bool train, at::ScalarType dtype) {
      wire::Record record;
      record.strings["case"] = id;
      record.strings["kind"] = "forward";
      record.strings["dtype"] = dtype == at::kFloat ? "float32" : "float64";
      record.strings["describe"] = config.text() + " " + record.strings["dtype"] + (train ? " train" : " eval") +
                                   " dropout=" + std::to_string(dropout).substr(0, 3);
      record.ints["seed"] = case_seed++;
      record.ints["dim"] = config.dim;
      record.ints["num_heads"] = config.heads;
      record.ints["train"] = train ? 1 : 0;
      record.reals["dropout"] = dropout;
      auto options = at::TensorOptions().dtype(dtype);
      record.tensors["x"] = at::randn({config.batch, config.tokens, config.dim}, generator, options);
      const double bound = 1.0 / std::sqrt(static_cast<double>(config.dim));
      for (const auto& name : exercise_.parameters) {
        record.tensors["param." + name + ".weight"] =
            at::empty({config.dim, config.dim}, options).uniform_(-bound, bound, generator);
        record.tensors["param." + name + ".bias"] = at::empty({config.dim}, options).uniform_(-bound, bound, generator);
      }
      cases.push_back(record);
      return &cases.back();
    };

    wire::Record indivisible;
    indivisible.strings["case"] = "indivisible";
    indivisible.strings["kind"] = "construct";
    indivisible.strings["describe"] = "MultiHeadSelfAttention(/*dim=*/10, /*num_heads=*/3)";
    indivisible.ints["seed"] = case_seed++;
    indivisible.ints["dim"] = 10;
    indivisible.ints["num_heads"] = 3;
    indivisible.reals["dropout"] = 0.1;
    cases.push_back(indivisible);

    for (size_t i = 0; i < kForwardConfigs.size(); ++i)
      add(forward_case(i), kForwardConfigs[i], 0.1, false, at::kDouble);
    add("float32", kForwardConfigs[0], 0.1, false, at::kFloat);
    add("loop_few_heads", kLoopFew, 0.0, false, at::kDouble);
    add("loop_many_heads", kLoopMany, 0.0, false, at::kDouble);
    auto* eval_a = add("eval_dropout_a", kForwardConfigs[0], kEvalDropout, false, at::kDouble);
    auto eval_b = *eval_a;
    eval_b.strings["case"] = "eval_dropout_b";
    eval_b.ints["seed"] = case_seed++;
    cases.push_back(eval_b);
    add_probe(cases, generator, case_seed++);
    auto* grads = add("gradients", kForwardConfigs[0], 0.1, false, at::kDouble);
    grads->tensors["grad_output"] = at::randn(grads->tensors["x"].sizes(), generator, at::kDouble);
    grads->strings["describe"] += ", backward";
    return cases;
  }

  std::vector<CheckResult> judge(const JudgeInput& input) override {
    input_ = &input;
    return {registered_names(),
            dropout_probability(),
            rejects_indivisible_dim(),
            output_shape(),
            forward_float64(),
            forward_float32(),
            no_head_loop(),
            dropout_inactive_in_eval(),
            dropout_on_attention_weights(),
            gradients(),
            check_no_builtins(results_, input)};
  }

 private:
  // Weights that make the output show the attention weights themselves: each
  // head's values are one-hot token ids plus a column of ones, and out_proj is
  // the identity. Output feature h*12 + j (j < 8) is then head h's weight on
  // token j after dropout, and feature h*12 + 8 the sum of that row.
  void add_probe(std::vector<wire::Record>& cases, at::Generator& generator, int64_t seed) {
    const auto& c = kProbe;
    const int64_t head_dim = c.dim / c.heads;
    auto options = at::TensorOptions().dtype(at::kDouble);
    wire::Record record;
    record.strings["case"] = "dropout_probe";
    record.strings["kind"] = "forward";
    record.strings["dtype"] = "float64";
    record.strings["describe"] = c.text() + " float64 train dropout=0.3, probe weights";
    record.ints["seed"] = seed;
    record.ints["dim"] = c.dim;
    record.ints["num_heads"] = c.heads;
    record.ints["train"] = 1;
    record.reals["dropout"] = kProbeDropout;
    auto x = at::randn({c.batch, c.tokens, c.dim}, generator, options);
    x.narrow(-1, 0, c.tokens).copy_(at::eye(c.tokens, options).expand({c.batch, c.tokens, c.tokens}));
    record.tensors["x"] = x;
    record.tensors["param.q_proj.weight"] = at::randn({c.dim, c.dim}, generator, options) * 0.3;
    record.tensors["param.q_proj.bias"] = at::zeros({c.dim}, options);
    record.tensors["param.k_proj.weight"] = at::randn({c.dim, c.dim}, generator, options) * 0.3;
    record.tensors["param.k_proj.bias"] = at::zeros({c.dim}, options);
    auto v_weight = at::zeros({c.dim, c.dim}, options);
    auto v_bias = at::zeros({c.dim}, options);
    for (int64_t h = 0; h < c.heads; ++h) {
      for (int64_t j = 0; j < c.tokens; ++j) v_weight[h * head_dim + j][j] = 1.0;
      v_bias[h * head_dim + c.tokens] = 1.0;
    }
    record.tensors["param.v_proj.weight"] = v_weight;
    record.tensors["param.v_proj.bias"] = v_bias;
    record.tensors["param.out_proj.weight"] = at::eye(c.dim, options);
    record.tensors["param.out_proj.bias"] = at::zeros({c.dim}, options);
    cases.push_back(record);
  }

  static reference::Parameters parameters_of(const CaseRun& run) {
    reference::Parameters parameters;
    for (const auto& [key, tensor] : run.request.tensors) {
      if (key.rfind("param.", 0) == 0) parameters[key.substr(6)] = tensor.to(at::kDouble);
    }
    return parameters;
  }

  static reference::MhsaResult expected(const CaseRun& run, const reference::MhsaVariant& variant = {}) {
    return reference::multi_head_self_attention(run.request.tensor("x").to(at::kDouble), parameters_of(run),
                                                run.request.integer("num_heads"), variant);
  }

  // Why the forward results of a case cannot be judged, if they cannot.
  std::optional<std::string> not_runnable(const CaseRun& run) const {
    if (run.threw()) {
      auto error = run.error();
      return "your code threw an error on " + run.describe() + ": " + error.substr(0, error.find('\n'));
    }
    if (run.response.strings.count("missing_parameters")) {
      return "the grader could not load its weights into your module (see registered_names)";
    }
    return std::nullopt;
  }

  std::optional<CheckResult> mismatch(const std::string& check, const CaseRun& run, const Tolerance& tolerance) {
    if (auto why = not_runnable(run)) return results_.fail(check, *why);
    std::string why;
    auto output = learner_tensor(run, "output", why);
    if (!output) return results_.fail(check, why + " (" + run.describe() + ")");
    auto cmp = compare(expected(run).output, *output, tolerance);
    if (cmp.ok) return std::nullopt;
    std::vector<std::string> evidence = {"input: " + run.describe(), "output: " + cmp.detail, input_->replay_hint()};
    const auto dim = run.request.integer("dim"), heads = run.request.integer("num_heads");
    auto replay = [&](const std::string& mistake) {
      return std::map<std::string, at::Tensor>{{"output", expected(run, variant_for(mistake, dim, heads)).output}};
    };
    if (auto mistake = diagnose(exercise_, {{"output", *output}}, replay, tolerance)) {
      return results_.fail_with_mistake(check, *mistake, evidence);
    }
    return results_.fail(check, "the output differs from the reference", evidence);
  }

  CheckResult registered_names() {
    const auto& run = input_->at(forward_case(0));
    // Names are reported right after construction, before forward runs.
    if (!run.response.ints.count("constructed")) return results_.threw("registered_names", run);
    std::vector<std::string> evidence;
    auto missing = run.response.string_or("missing_parameters", "");
    std::istringstream lines(missing);
    for (std::string name; std::getline(lines, name);) {
      evidence.push_back("missing or wrongly shaped: " + name);
    }
    if (!evidence.empty()) {
      auto registered = run.response.string_or("parameters", "");
      std::istringstream have(registered);
      for (std::string line; std::getline(have, line);) evidence.push_back("your module has: " + line);
      return results_.fail("registered_names",
                           "register q_proj, k_proj, v_proj and out_proj as Linear(dim, dim) with bias under exactly "
                           "those names: the grader loads weights by name",
                           evidence);
    }
    if (!run.response.reals.count("dropout.p")) {
      return results_.fail("registered_names", "no Dropout submodule is registered under the name 'dropout'");
    }
    return results_.pass("registered_names", "every projection and the dropout are registered by name");
  }

  CheckResult dropout_probability() {
    const auto& run = input_->at("dropout_probe");
    if (!run.response.ints.count("constructed")) return results_.threw("dropout_probability", run);
    auto found = run.response.reals.find("dropout.p");
    if (found == run.response.reals.end()) {
      return results_.skip("dropout_probability", "not assessed: no Dropout registered as 'dropout'");
    }
    if (std::abs(found->second - kProbeDropout) > 1e-12) {
      return results_.fail("dropout_probability", "the registered dropout does not use the constructor's probability",
                           {"constructed with dropout=" + std::to_string(kProbeDropout) +
                            ", registered Dropout has p=" + std::to_string(found->second)});
    }
    return results_.pass("dropout_probability", "dropout uses the probability given to the constructor");
  }

  CheckResult rejects_indivisible_dim() {
    const auto& run = input_->at("indivisible");
    if (!input_->at(forward_case(0)).response.ints.count("constructed")) {
      return results_.skip("rejects_indivisible_dim",
                           "not assessed: your constructor throws for valid arguments too (see registered_names)");
    }
    if (run.threw()) {
      auto error = run.error();
      return results_.pass("rejects_indivisible_dim", "refused with: " + error.substr(0, error.find('\n')));
    }
    return results_.fail("rejects_indivisible_dim",
                         "a dim that num_heads does not divide must be refused with an error (TORCH_CHECK), not "
                         "silently truncated",
                         {run.describe() + " was accepted"});
  }

  CheckResult output_shape() {
    std::vector<std::string> evidence;
    for (size_t i = 0; i < kForwardConfigs.size(); ++i) {
      const auto& run = input_->at(forward_case(i));
      if (auto why = not_runnable(run)) return results_.fail("output_shape", *why);
      std::string why;
      auto output = learner_tensor(run, "output", why);
      if (!output) return results_.fail("output_shape", why + " (" + run.describe() + ")");
      auto want = run.request.tensor("x").sizes();
      if (output->sizes() != want) {
        evidence.push_back(run.describe() + ": got " + shape_string(output->sizes()) + ", expected " +
                           shape_string(want));
      }
    }
    if (!evidence.empty()) return results_.fail("output_shape", "the output has the wrong shape", evidence);
    return results_.pass("output_shape", "(B, N, D) in every configuration");
  }

  CheckResult forward_float64() {
    for (size_t i = 0; i < kForwardConfigs.size(); ++i) {
      if (auto failure = mismatch("forward_float64", input_->at(forward_case(i)), exercise_.tolerance("float64"))) {
        return *failure;
      }
    }
    return results_.pass("forward_float64",
                         "matches the reference in " + std::to_string(kForwardConfigs.size()) + " configurations");
  }

  CheckResult forward_float32() {
    const auto& run = input_->at("float32");
    if (auto why = not_runnable(run)) return results_.fail("forward_float32", *why);
    auto dtype = run.response.string_or("output.dtype", "");
    if (dtype != "Float") {
      return results_.fail("forward_float32", "a float32 module and input gave an output of dtype " + dtype +
                                                  "; keep the input's dtype (do not hard-code one)");
    }
    if (auto failure = mismatch("forward_float32", run, exercise_.tolerance("float32"))) return *failure;
    return results_.pass("forward_float32", "float32 results match the reference within float32 tolerance");
  }

  CheckResult no_head_loop() {
    const auto& few = input_->at("loop_few_heads");
    const auto& many = input_->at("loop_many_heads");
    for (const auto* run : {&few, &many}) {
      if (auto why = not_runnable(*run)) return results_.fail("no_head_loop", *why);
    }
    auto ops_few = matmul_like_ops(few), ops_many = matmul_like_ops(many);
    if (ops_many > ops_few) {
      return results_.fail("no_head_loop",
                           "the number of matmul/softmax operations grows with the number of heads: reshape to "
                           "(B, H, N, head_dim) and let one batched matmul handle every head",
                           {std::to_string(kLoopFew.heads) + " heads: " + std::to_string(ops_few) + " operations",
                            std::to_string(kLoopMany.heads) + " heads: " + std::to_string(ops_many) + " operations"});
    }
    return results_.pass("no_head_loop", "the same operations run whatever the number of heads");
  }

  CheckResult dropout_inactive_in_eval() {
    const auto& a = input_->at("eval_dropout_a");
    const auto& b = input_->at("eval_dropout_b");
    for (const auto* run : {&a, &b}) {
      if (auto why = not_runnable(*run)) return results_.fail("dropout_inactive_in_eval", *why);
    }
    std::string why;
    auto first = learner_tensor(a, "output", why);
    auto second = learner_tensor(b, "output", why);
    if (!first || !second) return results_.fail("dropout_inactive_in_eval", why);
    const auto tolerance = exercise_.tolerance("float64");
    auto repeat = compare(*first, *second, tolerance);
    if (!repeat.ok) {
      return results_.fail("dropout_inactive_in_eval",
                           "in eval mode the output changes from run to run: dropout must be off outside training "
                           "(pass is_training() or use the registered Dropout module)",
                           {"input: " + a.describe(), "two eval runs: " + repeat.detail});
    }
    if (mismatch("dropout_inactive_in_eval", a, tolerance)) {
      if (!mismatch("dropout_inactive_in_eval", input_->at(forward_case(0)), tolerance)) {
        return results_.fail("dropout_inactive_in_eval",
                             "with dropout=0.5 in eval mode the output differs from the reference although it matches "
                             "with dropout=0.1: the dropout probability changes eval-mode results",
                             {"input: " + a.describe()});
      }
      return results_.skip("dropout_inactive_in_eval", "not assessed: the eval-mode output is wrong anyway");
    }
    return results_.pass("dropout_inactive_in_eval", "eval mode is deterministic and matches the reference");
  }

  CheckResult dropout_on_attention_weights() {
    const char* id = "dropout_on_attention_weights";
    const auto& run = input_->at("dropout_probe");
    if (auto why = not_runnable(run)) return results_.fail(id, *why);
    if (mismatch(id, input_->at(forward_case(0)), exercise_.tolerance("float64"))) {
      return results_.skip(id, "not assessed: the eval-mode output is wrong, so the training output cannot be read");
    }
    std::string why;
    auto output = learner_tensor(run, "output", why);
    if (!output) return results_.fail(id, why);
    const auto& c = kProbe;
    const int64_t head_dim = c.dim / c.heads;
    if (output->sizes() != run.request.tensor("x").sizes()) return results_.fail(id, "the output has the wrong shape");
    auto per_head = output->to(at::kDouble).reshape({c.batch, c.tokens, c.heads, head_dim}).transpose(1, 2);
    auto observed = per_head.narrow(-1, 0, c.tokens);  // (B, H, N, N)
    auto row_sums = per_head.select(-1, c.tokens);     // (B, H, N)
    auto clean = expected(run).weights;                // eval-mode weights
    const double p = kProbeDropout;
    const auto evidence_base = "input: " + run.describe();

    auto zeros = observed.eq(0);
    const double count = static_cast<double>(observed.numel());
    const double rate = zeros.sum().item<double>() / count;
    const double z = (rate - p) / std::sqrt(p * (1 - p) / count);
    std::ostringstream rate_text;
    rate_text.precision(3);
    rate_text << "observed drop rate " << rate << " over " << observed.numel()
              << " attention weights, expected p = " << p << " (z = " << z << ")";
    if (rate == 0) {
      if (compare(clean, observed, exercise_.tolerance("float64")).ok) {
        return results_.fail(id, "in training mode nothing is dropped: dropout must be active in training",
                             {evidence_base, rate_text.str()});
      }
      return results_.fail(id,
                           "in training no attention weight is exactly zero although the output is perturbed: "
                           "dropout must act on the weights after the softmax, not on the scores before it",
                           {evidence_base, rate_text.str()});
    }
    if (std::abs(z) > 5) {
      const bool swapped = std::abs(rate - (1 - p)) < 5 * std::sqrt(p * (1 - p) / count);
      return results_.fail(id,
                           swapped ? "attention weights are dropped at rate 1 - p: p is the drop probability, not the "
                                     "keep probability"
                                   : "the fraction of dropped attention weights does not match the dropout probability",
                           {evidence_base, rate_text.str()});
    }
    auto kept = ~zeros;
    auto ratio = observed.masked_select(kept) / clean.masked_select(kept);
    auto scale_cmp = compare(at::full_like(ratio, 1.0 / (1 - p)), ratio, {1e-6, 1e-9});
    if (!scale_cmp.ok) {
      double median = ratio.median().item<double>();
      return results_.fail(id, "the surviving attention weights are not scaled by 1/(1-p) (inverted dropout)",
                           {evidence_base, "kept weight / clean weight: median " + std::to_string(median) +
                                               ", expected " + std::to_string(1 / (1 - p))});
    }
    auto sum_cmp = compare(observed.sum(-1), row_sums, exercise_.tolerance("float64"));
    if (!sum_cmp.ok) {
      return results_.fail(
          id,
          "the drop pattern does not follow the attention weights: dropout is applied to another "
          "tensor (values, heads or output), not to the weights after the softmax",
          {evidence_base, "row sums of the kept weights vs the values' sum column: " + sum_cmp.detail});
    }
    return results_.pass(id, rate_text.str() + "; survivors scaled by 1/(1-p)");
  }

  CheckResult gradients() {
    const auto& run = input_->at("gradients");
    if (auto why = not_runnable(run)) return results_.fail("gradients", *why);
    if (mismatch("gradients", run, exercise_.tolerance("float64"))) {
      return results_.skip("gradients", "not assessed: the forward output is wrong, so gradients cannot be compared");
    }
    auto x = run.request.tensor("x").clone().requires_grad_(true);
    auto parameters = parameters_of(run);
    for (auto& [name, tensor] : parameters) tensor.requires_grad_(true);
    auto output = reference::multi_head_self_attention(x, parameters, run.request.integer("num_heads")).output;
    output.backward(run.request.tensor("grad_output"));
    std::vector<std::string> evidence;
    auto compare_grad = [&](const std::string& label, const std::string& field, const at::Tensor& want) {
      std::string why;
      auto got = learner_tensor(run, field, why);
      if (!got) {
        evidence.push_back(label + ": no gradient reached it");
        return;
      }
      auto cmp = compare(want, *got, exercise_.tolerance("float64"));
      if (!cmp.ok) evidence.push_back(label + " gradient: " + cmp.detail);
    };
    compare_grad("input x", "grad.x", x.grad());
    for (const auto& [name, tensor] : parameters) compare_grad(name, "grad.param." + name, tensor.grad());
    if (evidence.empty()) return results_.pass("gradients", "gradients of x and every parameter match the reference");
    evidence.insert(evidence.begin(), "input: " + run.describe());
    return results_.fail("gradients",
                         "the gradients are wrong or missing: something detaches the graph (detach, NoGradGuard, "
                         "data()) or is not differentiable",
                         evidence);
  }

  const Exercise& exercise_;
  ResultBuilder results_;
  const JudgeInput* input_ = nullptr;
};

}  // namespace

std::unique_ptr<Suite> make_suite_exercise_mhsa(const Exercise& exercise) { return std::make_unique<MhsaSuite>(exercise); }

}  // namespace grader
