// The child side of a "fit" case: does the learner's model learn? The module
// is built and initialised by the learner's own constructor (the case's seed
// fixes the draw), then trained with Adam on one small batch.
//
// Request: kind "fit", ctor.<argument>, dtype, input.<name> (the forward's
//   inputs), fit.labels (B) int64 class ids, ints fit.steps, reals fit.lr
// Response: constructed, losses (fit.steps) float64: the cross-entropy of the
//   first output (logits (B, C)) at each step, before that step's update; it
//   stops at the first loss that is not finite, and at a loss no parameter
//   reaches through the autograd graph (then also fit.no_graph = 1).
#pragma once

#include <ATen/ATen.h>
#include <torch/optim/adam.h>

#include "runner/module_driver.h"

namespace grader::driver {

// Runs the case if it is a fit case (and returns true), else leaves it to the caller.
template <typename Make, typename Forward>
bool run_fit_case(const wire::Record& request, wire::Record& response, Make make, Forward forward) {
  if (request.string("kind") != "fit") return false;
  auto module = make();
  response.ints["constructed"] = 1;
  const auto dtype = case_dtype(request);
  module->to(case_device(request), dtype);
  module->train();
  const auto labels = request.tensor("fit.labels").to(case_device(request));
  const int64_t steps = request.integer("fit.steps");
  torch::optim::Adam optimizer(module->parameters(), torch::optim::AdamOptions(request.real("fit.lr")));
  Inputs inputs(request, dtype, /*want_grad=*/false);
  std::vector<double> losses;
  for (int64_t step = 0; step < steps; ++step) {
    optimizer.zero_grad();
    auto outputs = outputs_of(output_names(request), forward(module, inputs));
    const at::Tensor& logits = outputs.front().second;
    TORCH_CHECK(logits.defined() && logits.dim() == 2 && logits.size(0) == labels.size(0), "the ",
                outputs.front().first, " must be (B, n_classes) to train on, and is ",
                logits.defined() ? logits.sizes() : at::IntArrayRef{});
    at::Tensor loss = at::nll_loss(at::log_softmax(logits, 1), labels);
    losses.push_back(loss.item<double>());
    if (!std::isfinite(losses.back())) break;
    if (!loss.requires_grad()) {  // nothing to train: said by the parent, not thrown
      response.ints["fit.no_graph"] = 1;
      break;
    }
    loss.backward();
    optimizer.step();
  }
  put_tensor(response, "losses", at::tensor(losses, at::kDouble));
  return true;
}

}  // namespace grader::driver
