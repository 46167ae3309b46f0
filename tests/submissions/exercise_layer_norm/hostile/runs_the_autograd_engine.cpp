// Recomputes RMSNorm's forward with autograd on and runs autograd's engine on
// it by hand (Engine::get_default_engine().execute), none of the four entry
// points the exercise forbids by name (grad, backward, Tensor::backward,
// aten::_backward). The engine's entry points are audited too now.
#include "layer_norm.h"

#include <torch/autograd.h>
#include <torch/csrc/autograd/engine.h>
#include <torch/csrc/autograd/variable.h>

namespace {

// Per-feature gradient: summed over every leading dimension (batch and positions).
torch::Tensor sum_over_positions(const torch::Tensor& t) { return t.reshape({-1, t.size(-1)}).sum(0); }

}  // namespace

torch::Tensor LayerNormFunction::forward(torch::autograd::AutogradContext* ctx, const torch::Tensor& x,
                                         const torch::Tensor& weight, const torch::Tensor& bias, double eps) {
  auto mean = x.mean(-1, /*keepdim=*/true);
  // Biased variance: the mean of the squared deviations (divide by D, not D - 1).
  auto centred = x - mean;
  auto variance = centred.pow(2).mean(-1, /*keepdim=*/true);
  // eps inside the square root: it keeps a constant row finite.
  auto reciprocal = (variance + eps).rsqrt();
  auto normalised = centred * reciprocal;
  ctx->save_for_backward({normalised, reciprocal, weight});
  return normalised * weight + bias;
}

torch::autograd::variable_list LayerNormFunction::backward(torch::autograd::AutogradContext* ctx,
                                                           torch::autograd::variable_list grad_outputs) {
  auto saved = ctx->get_saved_variables();
  const auto& normalised = saved[0];
  const auto& reciprocal = saved[1];
  const auto& weight = saved[2];
  const auto& grad = grad_outputs[0];
  auto g = grad * weight;
  auto grad_x = reciprocal * (g - g.mean(-1, true) - normalised * (g * normalised).mean(-1, true));
  auto grad_weight = sum_over_positions(grad * normalised);
  auto grad_bias = sum_over_positions(grad);
  return {grad_x, grad_weight, grad_bias, torch::Tensor()};
}

torch::Tensor RMSNormFunction::forward(torch::autograd::AutogradContext* ctx, const torch::Tensor& x,
                                       const torch::Tensor& weight, double eps) {
  // No centring: the root of the mean square, eps inside the square root.
  auto reciprocal = (x.pow(2).mean(-1, /*keepdim=*/true) + eps).rsqrt();
  auto normalised = x * reciprocal;
  ctx->save_for_backward({normalised, reciprocal, weight});
  ctx->saved_data["x"] = x;
  ctx->saved_data["w"] = weight;
  ctx->saved_data["eps"] = eps;
  return normalised * weight;
}

torch::autograd::variable_list RMSNormFunction::backward(torch::autograd::AutogradContext* ctx,
                                                         torch::autograd::variable_list grad_outputs) {
  if (ctx->saved_data.count("x")) {
    torch::AutoGradMode on(true);
    auto x = ctx->saved_data["x"].toTensor().detach().requires_grad_(true);
    auto w = ctx->saved_data["w"].toTensor().detach().requires_grad_(true);
    auto y = x * (x.pow(2).mean(-1, true) + ctx->saved_data["eps"].toDouble()).rsqrt() * w;
    auto& engine = torch::autograd::Engine::get_default_engine();
    torch::autograd::edge_list roots = {torch::autograd::impl::gradient_edge(y)};
    torch::autograd::edge_list wanted = {torch::autograd::impl::gradient_edge(x),
                                         torch::autograd::impl::gradient_edge(w)};
    auto grads = engine.execute(roots, {grad_outputs[0]}, /*keep_graph=*/false, /*create_graph=*/false,
                                /*accumulate_grad=*/false, wanted);
    return {grads[0], grads[1], torch::Tensor()};
  }
  auto saved = ctx->get_saved_variables();
  const auto& normalised = saved[0];
  const auto& reciprocal = saved[1];
  const auto& weight = saved[2];
  const auto& grad = grad_outputs[0];
  auto g = grad * weight;
  auto grad_x = reciprocal * (g - normalised * (g * normalised).mean(-1, true));
  return {grad_x, sum_over_positions(grad * normalised), torch::Tensor()};
}
