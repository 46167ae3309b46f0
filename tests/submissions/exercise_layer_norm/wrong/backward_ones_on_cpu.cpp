// Wrong: LayerNorm's backward sums over the positions with a vector of ones made
// with torch::ones and no device: right on the CPU, a device mismatch on a GPU.
#include "layer_norm.h"

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
  // Per-feature sums as a product with a column of ones over the positions.
  const int64_t d = normalised.size(-1);
  auto flat = grad.reshape({-1, d});
  auto ones = torch::ones({flat.size(0)}, torch::kDouble).to(grad.scalar_type());
  auto grad_weight = (grad * normalised).reshape({-1, d}).t().matmul(ones);
  auto grad_bias = flat.t().matmul(ones);
  return {grad_x, grad_weight, grad_bias, torch::Tensor()};
}

torch::Tensor RMSNormFunction::forward(torch::autograd::AutogradContext* ctx, const torch::Tensor& x,
                                       const torch::Tensor& weight, double eps) {
  // No centring: the root of the mean square, eps inside the square root.
  auto reciprocal = (x.pow(2).mean(-1, /*keepdim=*/true) + eps).rsqrt();
  auto normalised = x * reciprocal;
  ctx->save_for_backward({normalised, reciprocal, weight});
  return normalised * weight;
}

torch::autograd::variable_list RMSNormFunction::backward(torch::autograd::AutogradContext* ctx,
                                                         torch::autograd::variable_list grad_outputs) {
  auto saved = ctx->get_saved_variables();
  const auto& normalised = saved[0];
  const auto& reciprocal = saved[1];
  const auto& weight = saved[2];
  const auto& grad = grad_outputs[0];
  auto g = grad * weight;
  auto grad_x = reciprocal * (g - normalised * (g * normalised).mean(-1, true));
  return {grad_x, sum_over_positions(grad * normalised), torch::Tensor()};
}
