// Saves only the inputs and recomputes the statistics in backward (less memory
// held between the passes), with var(unbiased = false).
#include "layer_norm.h"

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

torch::Tensor LayerNormFunction::forward(AutogradContext* ctx, const torch::Tensor& x, const torch::Tensor& weight,
                                         const torch::Tensor& bias, double eps) {
  ctx->save_for_backward({x, weight});
  ctx->saved_data["eps"] = eps;
  auto mean = x.mean({-1}, true);
  auto var = x.var({-1}, /*unbiased=*/false, /*keepdim=*/true);
  return (x - mean) / torch::sqrt(var + eps) * weight + bias;
}

variable_list LayerNormFunction::backward(AutogradContext* ctx, variable_list grads) {
  auto saved = ctx->get_saved_variables();
  auto x = saved[0], weight = saved[1];
  double eps = ctx->saved_data["eps"].toDouble();
  auto mean = x.mean({-1}, true);
  auto var = x.var({-1}, false, true);
  auto inv_std = 1.0 / torch::sqrt(var + eps);
  auto xhat = (x - mean) * inv_std;
  auto dy = grads[0];
  auto dxhat = dy * weight;
  auto dx = inv_std * (dxhat - dxhat.mean({-1}, true) - xhat * (dxhat * xhat).mean({-1}, true));
  auto dweight = (dy * xhat).flatten(0, -2).sum(0);
  auto dbias = dy.flatten(0, -2).sum(0);
  return {dx, dweight, dbias, torch::Tensor()};
}

torch::Tensor RMSNormFunction::forward(AutogradContext* ctx, const torch::Tensor& x, const torch::Tensor& weight,
                                       double eps) {
  ctx->save_for_backward({x, weight});
  ctx->saved_data["eps"] = eps;
  return x / torch::sqrt(x.pow(2).mean({-1}, true) + eps) * weight;
}

variable_list RMSNormFunction::backward(AutogradContext* ctx, variable_list grads) {
  auto saved = ctx->get_saved_variables();
  auto x = saved[0], weight = saved[1];
  double eps = ctx->saved_data["eps"].toDouble();
  auto inv_rms = 1.0 / torch::sqrt(x.pow(2).mean({-1}, true) + eps);
  auto xhat = x * inv_rms;
  auto dy = grads[0];
  auto dxhat = dy * weight;
  auto dx = inv_rms * (dxhat - xhat * (dxhat * xhat).mean({-1}, true));
  return {dx, (dy * xhat).flatten(0, -2).sum(0), torch::Tensor()};
}
