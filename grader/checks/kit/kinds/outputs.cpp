#include "checks/kit/kit.h"

#include <ATen/ATen.h>
#include <ATen/CPUGeneratorImpl.h>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <torch/version.h>

#include <algorithm>
#include <chrono>
#include <cctype>
#include <cmath>
#include <functional>
#include <limits>
#include <set>
#include <sstream>

#include "checks/kit/helpers.h"
#include "base/errors.h"
#include "report/report.h"

namespace grader::kit {

// `buffers: a,b`: each named tensor is a registered buffer (it moves with
// .to() and is saved with the module), not a parameter (which an optimizer
// would train) nor a plain member.
CheckResult Kit::registered_buffers(const CheckSpec& spec, const CaseRun& run) const {
  std::set<std::string> parameters, buffers;
  for (const auto& param : module_parameters(run)) parameters.insert(param.name);
  for (const auto& buffer : kit::module_buffers(run)) buffers.insert(buffer.name);
  std::string names;
  std::istringstream list(spec.option("buffers"));
  for (std::string name; std::getline(list, name, ',');) {
    name.erase(0, name.find_first_not_of(' '));
    name.erase(name.find_last_not_of(' ') + 1);
    if (parameters.count(name)) {
      return results_.fail(spec.id,
                           "'" + name + "' is registered as a parameter: it is a constant table, not learned (an "
                           "optimizer would change it); register it with register_buffer(\"" + name + "\", table)",
                           {"registered parameters include " + name});
    }
    if (!buffers.count(name)) {
      return results_.fail(spec.id,
                           "no buffer is registered as '" + name + "': a plain tensor member does not move with "
                           "module->to() and is not saved with the module; register_buffer(\"" + name + "\", table)");
    }
    names += (names.empty() ? "" : ", ") + name;
  }
  return results_.pass(spec.id, names + ": registered as buffers, not parameters");
}

CheckResult Kit::parameters(const CheckSpec& spec) const {
  const auto& run = input_->at(cases_of(spec).front());
  if (!run.response.ints.count("constructed")) return results_.threw(spec.id, run);
  if (!spec.option("buffers").empty()) return registered_buffers(spec, run);
  std::vector<std::string> evidence;
  // One line per missing name, or per sub-module when several of its names are missing.
  std::map<std::string, std::vector<std::string>> missing;
  for (const auto& name : listed_names(run, "missing_parameters")) {
    missing[name.substr(0, name.find('.'))].push_back(name);
  }
  const auto have = module_parameters(run);
  for (const auto& [module, names] : missing) {
    if (names.size() <= 3) {
      for (const auto& name : names) evidence.push_back("missing or wrongly shaped: " + name);
      continue;
    }
    const bool none = std::none_of(have.begin(), have.end(), [&](const Registered& param) {
      return param.name.rfind(module + ".", 0) == 0;
    });
    evidence.push_back(fmt::format("missing or wrongly shaped: {} parameters under '{}.' ({}, {}, ...){}", names.size(),
                                   module, names[0], names[1],
                                   none ? fmt::format(": your module has nothing registered under '{}' "
                                                      "(is register_module called for it?)",
                                                      module)
                                        : ""));
  }
  std::string names;
  const auto dims = data_of(run).dims;
  for (const auto& param : exercise_.signature.parameters) {
    // A template is shown once, with its range: layers.{0..2}.linear1.weight.
    auto name = param.name;
    if (auto pattern = name_template(name, dims)) {
      const auto count = pattern->count;
      name = pattern->before + (count == 1 ? "0" : fmt::format("{{0..{}}}", count - 1)) + pattern->after;
    }
    names += (names.empty() ? "" : ", ") + name + " " + shape_string(shape_of(param, dims));
  }
  if (!evidence.empty()) {
    for (const auto& param : have) evidence.push_back("your module has: " + param.describe());
    return results_.fail(spec.id, "the grader loads weights by name and shape: register exactly " + names, evidence);
  }
  if (spec.option("exact") == "true") {
    // Nothing registered beyond the signature: a bias the statement leaves
    // out, or a projection wider than it says, is a different module.
    std::set<std::string> named;
    int64_t want = 0;
    for (const auto& param : parameters_of(exercise_.signature.parameters, dims)) {
      named.insert(param.name);
      int64_t count = 1;
      for (auto size : shape_of(param, dims)) count *= size;
      want += count;
    }
    std::vector<std::string> extra;
    int64_t have_count = 0;
    for (const auto& param : have) {
      int64_t count = 1;
      for (auto size : param.sizes) count *= size;
      have_count += count;
      if (!named.count(param.name)) extra.push_back("registered but not in the interface: " + param.describe());
    }
    if (!extra.empty()) {
      extra.push_back(fmt::format("your module has {} parameters in all; the interface's module has {} ({})",
                                  have_count, want, names));
      return results_.fail(
          spec.id, "your module registers parameters the interface does not have: register exactly " + names, extra);
    }
  }
  auto dropout = spec.option("dropout");
  if (!dropout.empty() && !registered_dropout(run, dropout)) {
    return results_.fail(spec.id, "no Dropout submodule is registered under the name '" + dropout + "'");
  }
  return results_.pass(spec.id, "every parameter is registered under its name with its shape");
}

CheckResult Kit::rejects(const CheckSpec& spec) const {
  const auto& run = input_->at("rejects~" + spec.id);
  const auto& valid = input_->at(cases_.front().id);
  if (!valid.response.ints.count("constructed")) {
    // Valid arguments refused and these accepted: the condition is inverted.
    if (!run.threw() && valid.threw()) {
      return results_.fail(spec.id,
                           "your constructor refuses valid arguments and accepts these, which must be refused: its "
                           "condition is the wrong way round (a check throws when its condition is false)",
                           {run.describe() + " was accepted",
                            valid.describe() + " was refused: " + first_line(valid.error())});
    }
    return results_.skip(spec.id, "not assessed: your constructor throws for valid arguments too");
  }
  if (run.threw()) return results_.pass(spec.id, "refused with: " + first_line(run.error()));
  return results_.fail(spec.id, spec.option("says", "these arguments must be refused with an error (TORCH_CHECK)"),
                       {run.describe() + " was accepted"});
}

CheckResult Kit::refuses(const CheckSpec& spec) const {
  // Words one of which the error must contain, so that it says why ("max_len").
  const auto words = option_list(spec, "mentions", "");
  std::vector<std::string> refused;
  for (const auto& id : spec.cases) {
    const auto& run = input_->at(id);
    if (!run.threw()) {
      return results_.fail(spec.id, spec.option("says", "this input must be refused with an error (TORCH_CHECK)"),
                           {run.describe() + " was accepted"});
    }
    auto message = first_line(run.error());
    // A refusal means something only where valid inputs are accepted.
    if (!run.response.ints.count("constructed")) {
      return results_.skip(spec.id, "not assessed: your constructor throws (" + message + ")");
    }
    const auto& valid = input_->at(cases_.front().id);
    if (valid.threw() && first_line(valid.error()) == message) {
      return results_.skip(spec.id, "not assessed: your code throws the same error on valid inputs (" + message + ")");
    }
    const bool says_why = words.empty() || mentions_any(message, words);
    if (!says_why) {
      return results_.fail(spec.id,
                           "refused, but the error does not say why: check the input yourself and say what is wrong "
                           "(mention " +
                               fmt::format("{}", fmt::join(words, " or ")) + ")",
                           {"input: " + run.describe(), "your error: " + message});
    }
    refused.push_back(message);
  }
  return results_.pass(spec.id, "refused with: " + refused.front());
}

CheckResult Kit::shapes(const CheckSpec& spec) const {
  std::vector<std::string> evidence;
  for (const auto& id : cases_of(spec)) {
    const auto& run = input_->at(id);
    if (not_runnable(run)) return explain(spec.id, id);
    const auto dims = data_of(run).dims;
    for (const auto& output : exercise_.signature.outputs) {
      if (!spec.option("output").empty() && spec.option("output") != output.name) continue;
      std::string why;
      auto tensor = learner_tensor(run, output.name, why);
      if (!tensor) return results_.fail(spec.id, why + " (" + run.describe() + ")");
      auto want = shape_of(output, dims);
      if (tensor->sizes() != at::IntArrayRef(want)) {
        evidence.push_back(run.describe() + ": " + output.name + " " + shape_string(tensor->sizes()) + ", expected " +
                           shape_string(want));
      }
    }
  }
  if (!evidence.empty()) return results_.fail(spec.id, "an output has the wrong shape", evidence);
  return results_.pass(spec.id, "the right shapes in every configuration");
}

CheckResult Kit::numerics(const CheckSpec& spec) const {
  const auto ids = cases_of(spec);
  for (const auto& id : ids) {
    const auto& run = input_->at(id);
    if (!not_runnable(run)) {
      const auto dtype = run.request.string_or("dtype", "float64");
      const std::string want = c10::toString(dtype_of(dtype));
      for (const auto& output : exercise_.signature.outputs) {
        auto got = run.response.string_or(output.name + ".dtype", want);
        if (got != want && got != "undefined") {
          auto result = results_.fail(spec.id,
                                      dtype + " inputs gave the " + output.name + " in dtype " + got +
                                          ": keep the inputs' dtype (do not hard-code one)",
                                      {"input: " + run.describe()});
          if (has_focus_point("numerics")) result.focus_point = "numerics";
          return result;
        }
      }
    }
    // An input changed in place is a side effect the caller sees, whatever
    // the outputs: counted against numerics (exact results for the caller).
    if (auto modified = modified_inputs(run)) {
      // Name the in-place operations only where the trace shows them.
      const auto in_place = ran_in_place(run);
      std::string how = "write each result into a new tensor, or clone before changing one in place";
      if (!in_place.empty()) {
        how = fmt::format("your forward runs {} (in place): use the out-of-place form ({}), or clone first",
                          fmt::join(in_place, ", "), in_place.front().substr(0, in_place.front().size() - 1));
      }
      auto result = results_.fail(spec.id,
                                  "your code changed its input " + *modified +
                                      " in place: the caller's tensor must come back as it went in (" + how + ")",
                                  {"input: " + run.describe()});
      if (has_focus_point("numerics")) {
        result.focus_point = "numerics";
      } else {
        result.blames_focus = false;
      }
      return result;
    }
    if (status(id) != CaseStatus::matches) return explain(spec.id, id);
    // Matching within tolerance is not enough where the mask hides a key: its weight must be exactly 0.
    auto zero_in = spec.option("zero_where_masked");
    if (!zero_in.empty() && run.request.has_tensor(wire::key::input("mask"))) {
      std::string why;
      auto weights = learner_tensor(run, zero_in, why);
      auto hidden = (run.request.tensor(wire::key::input("mask")) == 0).expand_as(*weights);
      auto leaked = weights->masked_select(hidden).ne(0).sum().item<int64_t>();
      if (leaked > 0) {
        return results_.fail(
            spec.id, "masked positions must get exactly zero weight (fill with -inf before the softmax)",
            {"input: " + run.describe(), std::to_string(leaked) + " masked weights are not exactly 0"});
      }
    }
  }
  return results_.pass(spec.id, "matches the reference in " + std::to_string(ids.size()) + " configuration" +
                                    (ids.size() == 1 ? "" : "s"));
}

CheckResult Kit::gradients(const CheckSpec& spec) const {
  const auto id = cases_of(spec).front();
  const auto& run = input_->at(id);
  if (not_runnable(run)) return explain(spec.id, id);
  const auto s = status(id);
  if (s != CaseStatus::matches && s != CaseStatus::precision) {
    return results_.skip(spec.id, "not assessed: the forward results are wrong for this input (" + run.describe() +
                                      "), so gradients cannot be compared");
  }
  // The reference's gradients, or a tolerated variant's (tolerances.exact).
  auto gradients_of = [&](const std::vector<std::string>& variant) {
    auto data = data_of(run);
    for (auto& [name, tensor] : data.inputs) {
      if (tensor.is_floating_point()) tensor = tensor.clone().requires_grad_(true);
    }
    for (auto& [name, tensor] : data.params) tensor = tensor.clone().requires_grad_(true);
    auto outputs = reference_(data, variant);
    outputs.at(exercise_.signature.outputs.front().name).backward(run.request.tensor("grad_output"));
    std::vector<std::tuple<std::string, std::string, at::Tensor>> out;  // label, field, gradient
    for (const auto& [name, tensor] : data.inputs) {
      if (tensor.is_floating_point()) out.emplace_back("input " + name, wire::key::grad_input(name), tensor.grad());
    }
    for (const auto& [name, tensor] : data.params) out.emplace_back(name, wire::key::grad_param(name), tensor.grad());
    return out;
  };
  std::vector<std::string> missing, differ, precise;
  const auto& tight = exercise_.tolerance(run.request.string_or("dtype", "float64") == "float64" ? "exact" : "float64");
  const auto& loose = exercise_.tolerance("float32");
  auto compare_all = [&](const std::vector<std::tuple<std::string, std::string, at::Tensor>>& want) {
    missing.clear(), differ.clear(), precise.clear();
    for (const auto& [label, field, gradient] : want) {
      std::string why;
      auto got = learner_tensor(run, field, why);
      if (!got) {
        missing.push_back(label);
        continue;
      }
      auto cmp = compare(gradient, *got, tight);
      if (cmp.ok) continue;
      (compare(gradient, *got, loose).ok ? precise : differ).push_back(label + ": " + cmp.detail);
    }
    return missing.empty() && differ.empty() && precise.empty();
  };
  const auto reference_gradients = gradients_of({});
  bool matched = compare_all(reference_gradients);
  for (size_t i = 0; !matched && missing.empty() && i < exercise_.tolerated.size(); ++i)
    matched = compare_all(gradients_of({exercise_.tolerated[i].id}));
  if (!matched) compare_all(reference_gradients);  // the evidence is the reference's
  std::vector<std::string> evidence = {"input: " + run.describe()};
  if (!missing.empty()) {
    for (const auto& name : missing) evidence.push_back("no gradient reached " + name);
    return results_.fail(spec.id,
                         "no gradient reaches some inputs or parameters: something cuts them from the autograd "
                         "graph (detach(), .data(), NoGradGuard) or they are not used",
                         evidence);
  }
  // The forward only matched loosely: the gradients of a slightly different
  // function differ too, which says nothing of the graph; nor of precision,
  // unless the forward's own difference is float32 rounding.
  if (s == CaseStatus::precision && (!differ.empty() || (!precise.empty() && !rounding_explains(run)))) {
    evidence.insert(evidence.end(), differ.begin(), differ.end());
    evidence.insert(evidence.end(), precise.begin(), precise.end());
    auto result = results_.fail(spec.id,
                                "unexplained: the gradients differ from the reference, and so does the forward, "
                                "slightly (see the forward checks): fix the forward first",
                                evidence);
    result.blames_focus = false;
    return result;
  }
  if (!differ.empty()) {
    evidence.insert(evidence.end(), differ.begin(), differ.end());
    return results_.fail(spec.id,
                         "the gradients differ from the reference although the forward results match: part of the "
                         "computation is cut from the graph (detach(), .data(), NoGradGuard) or not differentiable",
                         evidence);
  }
  if (!precise.empty()) {
    evidence.insert(evidence.end(), precise.begin(), precise.end());
    auto result = results_.fail(spec.id,
                                "the gradients have float32 precision in a float64 check: is a tensor or a constant "
                                "computed in float32?",
                                evidence);
    if (has_focus_point("numerics")) result.focus_point = "numerics";  // a precision matter, not the graph
    return result;
  }
  return results_.pass(spec.id, "gradients of every input and parameter match the reference");
}

CheckResult Kit::deterministic(const CheckSpec& spec) const {
  const auto id = cases_of(spec).front();
  const auto& a = input_->at(id);
  const auto& b = input_->at(repeat_case(id));
  for (const auto* run : {&a, &b}) {
    if (not_runnable(*run)) return explain(spec.id, id);
  }
  const auto& name = exercise_.signature.outputs.front().name;
  std::string why;
  auto first = learner_tensor(a, name, why);
  auto second = learner_tensor(b, name, why);
  if (!first || !second) return results_.fail(spec.id, why);
  auto repeat = compare(*first, *second, exercise_.tolerance("float64"));
  if (!repeat.ok) {
    // What is random is said from what this eval-mode run ran: a dropout
    // that acts (it draws its mask with bernoulli_; in eval mode aten::dropout
    // runs too, and returns its input), or a random draw.
    std::string why = "something random runs in forward";
    if (a.ran("bernoulli_") || a.ran("bernoulli") || a.ran("native_dropout")) {
      why = "a dropout acts outside training (it must be off in eval mode: call the registered Dropout module, "
            "which module->eval() switches off, or pass is_training() to the functional one)";
    } else if (a.ran("randn") || a.ran("rand") || a.ran("randint") || a.ran("normal_") || a.ran("uniform_") ||
               a.ran("multinomial") || a.ran("randperm")) {
      why = "your forward draws random numbers: in eval mode its output must depend on its inputs and weights only";
    }
    return results_.fail(spec.id,
                         "in eval mode the " + name + " changes between two runs on identical inputs: " + why,
                         {"input: " + a.describe(), "two runs: " + repeat.detail});
  }
  const auto s = status(id);
  if (s == CaseStatus::matches || s == CaseStatus::precision) {
    return results_.pass(spec.id, "eval mode is deterministic and matches the reference");
  }
  for (const auto& other : cases_) {
    if (status(other.id) == CaseStatus::matches) return explain(spec.id, id);
  }
  return results_.skip(spec.id, "not assessed: deterministic, but the eval-mode results are wrong in every case");
}

CheckResult Kit::masked_values(const CheckSpec& spec) const {
  const auto id = cases_of(spec).front();
  const auto& base = input_->at(id);
  const auto& repeat = input_->at(repeat_case(id));
  const auto& changed = input_->at(masked_values_case(id));
  for (const auto* run : {&base, &repeat, &changed}) {
    if (not_runnable(*run)) return explain(spec.id, id);
  }
  // Results wrong for a reason of another focus point (a scrambled matmul
  // mixes masked keys in too) say nothing about masking.
  const auto s = status(id);
  if (s == CaseStatus::differs) {
    auto reason = explain(spec.id, id);
    if (reason.focus_point != spec.focus_point) {
      return results_.skip(spec.id, "not assessed: your results on this input are wrong for another reason (" +
                                        reason.focus_point + ": " + first_line(reason.message) + ")");
    }
  }
  const auto& name = exercise_.signature.outputs.front().name;
  std::string why;
  auto first = learner_tensor(base, name, why);
  auto again = learner_tensor(repeat, name, why);
  auto second = learner_tensor(changed, name, why);
  if (!first || !again || !second) return results_.fail(spec.id, why);
  if (!compare(*first, *again, exercise_.tolerance("float64")).ok) {
    return results_.skip(spec.id,
                         "not assessed: your " + name +
                             " changes between two runs on identical inputs (something random runs in forward), "
                             "so the influence of masked keys cannot be isolated");
  }
  auto cmp = compare(*first, *second, exercise_.tolerance("float64"));
  if (cmp.ok) return results_.pass(spec.id, "values behind fully masked keys have no influence");
  return results_.fail(spec.id,
                       "changing only the keys and values that every query must ignore changed the " + name +
                           ": masked keys still contribute (masked scores must become -inf before the softmax)",
                       {"input: " + changed.describe(), name + " before vs after: " + cmp.detail});
}

CheckResult Kit::work_growth(const CheckSpec& spec) const {
  const auto ids = cases_of(spec);
  if (ids.size() != 2) throw ConfigError("check '" + spec.id + "' (work_growth) needs exactly two cases");
  // Two counts of each case: the operators the learner's code called itself
  // inside forward, whatever their names (a loop of any operator shows), and
  // the matrix products, softmaxes, products and quotients at any depth.
  std::vector<OperatorCount> counts;
  for (const auto& id : ids) {
    const auto& run = input_->at(id);
    if (not_runnable(run)) return explain(spec.id, id);
    const auto trace = run.trace();
    OperatorCount count;
    for (const auto& call : trace.scope_work) count.own += static_cast<int64_t>(call.calls);
    count.traced = !trace.scope_work.empty();
    for (const auto& [op, n] : trace.op_counts) {
      if (is_product_kernel(op)) count.products += n;
      if (is_matrix_product(op) || op == "aten::softmax" || op == "aten::_softmax" || op == "aten::mul" ||
          op == "aten::div") {
        count.named += n;
      }
    }
    counts.push_back(count);
  }
  const auto& a = input_->at(ids[0]);
  const auto& b = input_->at(ids[1]);
  const bool grew = operators_grow(counts[0], counts[1]);
  if (grew || too_many_products(counts[0], counts[1])) {
    std::vector<std::string> evidence;
    if (counts[0].traced && counts[1].traced) {
      evidence.push_back(fmt::format("operators your forward called itself: {} on {}, {} on {}", counts[0].own,
                                     a.describe(), counts[1].own, b.describe()));
    }
    evidence.push_back(fmt::format("matrix products, softmaxes, products and quotients: {} on {}, {} on {}",
                                   counts[0].named, a.describe(), counts[1].named, b.describe()));
    evidence.push_back(fmt::format("calls of the kernels matrix products come down to (mm, bmm, addmm, mv, ...), at "
                                   "any depth: {} on {}, {} on {} (a batched file makes 4 to 6, whatever the heads)",
                                   counts[0].products, a.describe(), counts[1].products, b.describe()));
    if (!grew) {
      return results_.fail(spec.id,
                           fmt::format("your forward makes {} matrix products whatever the number of heads, where a "
                                       "batched one makes 4 to 6: a loop over a fixed number of head slots is a loop "
                                       "over heads too; keep the heads as a tensor axis and let one batched matmul "
                                       "handle every head",
                                       std::max(counts[0].products, counts[1].products)),
                           evidence);
    }
    return results_.fail(spec.id, spec.option("says", "the number of operations grows with the configuration"),
                         evidence);
  }
  return results_.pass(spec.id, counts[0].traced ? fmt::format("the same {} operators run in both configurations",
                                                               counts[0].own)
                                                 : std::string("the same operations run in both configurations"));
}

}  // namespace grader::kit
