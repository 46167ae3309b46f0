// var_mean for the statistics, dL/dx through the explicit per-row (D x D) Jacobian and matmul, parameter gradients by sum_to_size. (from a red-team pass)
#include "layer_norm.h"

#include <tuple>

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

torch::Tensor LayerNormFunction::forward(AutogradContext* ctx, const torch::Tensor& x, const torch::Tensor& weight,
                                         const torch::Tensor& bias, double eps) {
  torch::Tensor var, mean;
  std::tie(var, mean) = torch::var_mean(x, {-1}, /*unbiased=*/false, /*keepdim=*/true);
  auto inv_std = (var + eps).rsqrt();
  auto xhat = (x - mean) * inv_std;
  ctx->save_for_backward({xhat, inv_std, weight});
  return torch::addcmul(bias, xhat, weight);
}

variable_list LayerNormFunction::backward(AutogradContext* ctx, variable_list grads) {
  auto saved = ctx->get_saved_variables();
  auto xhat = saved[0], inv_std = saved[1], weight = saved[2];
  auto dy = grads[0];
  const auto d = xhat.size(-1);
  auto g = dy * weight;
  // J_ij = d xhat_i / d x_j = r (delta_ij - 1/D - xhat_i xhat_j / D), symmetric.
  auto eye = torch::eye(d, xhat.options());
  auto outer = xhat.unsqueeze(-1) * xhat.unsqueeze(-2);
  auto jac = inv_std.unsqueeze(-1) * (eye - 1.0 / d - outer / d);
  auto dx = torch::matmul(jac, g.unsqueeze(-1)).squeeze(-1);
  return {dx, (dy * xhat).sum_to_size(weight.sizes()), dy.sum_to_size(weight.sizes()), torch::Tensor()};
}

torch::Tensor RMSNormFunction::forward(AutogradContext* ctx, const torch::Tensor& x, const torch::Tensor& weight,
                                       double eps) {
  auto inv_rms = (x.square().mean(-1, true) + eps).rsqrt();
  auto xhat = x * inv_rms;
  ctx->save_for_backward({xhat, inv_rms, weight});
  return xhat * weight;
}

variable_list RMSNormFunction::backward(AutogradContext* ctx, variable_list grads) {
  auto saved = ctx->get_saved_variables();
  auto xhat = saved[0], inv_rms = saved[1], weight = saved[2];
  auto dy = grads[0];
  const auto d = xhat.size(-1);
  auto g = dy * weight;
  auto eye = torch::eye(d, xhat.options());
  auto jac = inv_rms.unsqueeze(-1) * (eye - xhat.unsqueeze(-1) * xhat.unsqueeze(-2) / d);
  auto dx = torch::matmul(jac, g.unsqueeze(-1)).squeeze(-1);
  return {dx, (dy * xhat).sum_to_size(weight.sizes()), torch::Tensor()};
}
