// The kit kind causal_outputs: whether a sequence model's output at a
// position depends on later positions, measured. The later half of one input
// is redrawn; every output at an earlier position must stay exactly as it was
// (the reference's does, whatever its weights), so a model that moves them
// sees the future, however it came to.
#include <ATen/ATen.h>
#include <fmt/format.h>

#include <algorithm>
#include <limits>

#include "base/errors.h"
#include "checks/kit/kit.h"

namespace grader::kit {

std::string later_redrawn_case(const std::string& id) { return id + "~later_redrawn"; }

wire::Record Kit::later_redrawn_twin(const wire::Record& record, const std::string& input,
                                     at::Generator& generator) const {
  const auto spec = std::find_if(exercise_.signature.inputs.begin(), exercise_.signature.inputs.end(),
                                 [&](const TensorSpec& t) { return t.name == input; });
  if (spec == exercise_.signature.inputs.end()) {
    throw ConfigError("a causal_outputs check redraws the input '" + input + "', which the signature lacks");
  }
  auto twin = record;
  twin.tensors.erase("grad_output");
  const auto id = record.string("case");
  twin.strings["case"] = later_redrawn_case(id);
  auto tensor = twin.tensor(wire::key::input(input)).clone();
  const auto n = tensor.size(1), t = n / 2;
  if (n < 2) throw ConfigError("a causal_outputs check needs a case with at least 2 positions ('" + id + "')");
  std::vector<int64_t> shape(tensor.sizes().begin(), tensor.sizes().end());
  shape[1] = n - t;
  at::Tensor drawn;
  if (spec->kind == "tokens") {
    drawn = at::randint(evaluate_dim(spec->below, dims_of(record)), shape, generator, at::kLong);
  } else {
    drawn = at::randn(shape, generator, at::kDouble).to(tensor.scalar_type());
  }
  tensor.narrow(1, t, n - t).copy_(drawn);
  twin.tensors[wire::key::input(input)] = tensor;
  twin.strings["describe"] += fmt::format(", positions {}..{} of {} redrawn", t, n - 1, input);
  return twin;
}

CheckResult Kit::causal_outputs(const CheckSpec& spec) const {
  if (spec.cases.size() != 1) throw ConfigError("check '" + spec.id + "' (causal_outputs) needs exactly one case");
  const auto& id = spec.cases.front();
  const auto& base = input_->at(id);
  const auto& changed = input_->at(later_redrawn_case(id));
  for (const auto* run : {&base, &changed}) {
    if (not_runnable(*run)) return results_.skip(spec.id, "not measured: " + *not_runnable(*run));
  }
  const auto& name = exercise_.signature.outputs.front().name;
  std::string why;
  auto before = learner_tensor(base, name, why), after = learner_tensor(changed, name, why);
  if (!before || !after) return results_.skip(spec.id, "not measured: " + why);
  const auto input = spec.option("input", exercise_.signature.inputs.front().name);
  const auto n = base.request.tensor(wire::key::input(input)).size(1), t = n / 2;
  if (before->dim() < 2 || before->sizes() != after->sizes() || before->size(1) != n) {
    return results_.skip(spec.id, "not measured: the " + name + " has the wrong shape");
  }
  if (!at::isfinite(*before).all().item<bool>() || !at::isfinite(*after).all().item<bool>()) {
    return results_.skip(spec.id, "not measured: your " + name + " has NaN or infinite values");
  }
  // Only a model that gives the same output twice can show what moved it.
  const auto& again = input_->at(repeat_case(id));
  auto repeated = not_runnable(again) ? std::nullopt : learner_tensor(again, name, why);
  if (!repeated || repeated->sizes() != before->sizes() || !at::equal(*repeated, *before)) {
    return results_.skip(spec.id, "not measured: your " + name +
                                      " changes between two runs on the same input (in eval mode), so what moves "
                                      "it cannot be told");
  }
  auto moved = (before->narrow(1, 0, t).to(at::kDouble) - after->narrow(1, 0, t).to(at::kDouble)).abs();
  const double most = at::nan_to_num(moved, std::numeric_limits<double>::infinity()).max().item<double>();
  if (most == 0) {
    return results_.pass(spec.id, fmt::format("redrawing positions {}..{} leaves the {} at 0..{} exactly as they were",
                                              t, n - 1, name, t - 1));
  }
  return results_.fail(spec.id, spec.option("says", "your model sees the future: redrawing later positions moves "
                                                    "the outputs at earlier ones"),
                       {"input: " + changed.describe(),
                        fmt::format("the {} at positions 0..{} moved by up to {:.3g} (0 expected)", name, t - 1, most),
                        input_->replay_hint()});
}

}  // namespace grader::kit
