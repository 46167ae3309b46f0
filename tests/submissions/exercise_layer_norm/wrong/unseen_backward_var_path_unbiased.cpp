// the chain rule's variance path divides by D - 1 (d var / d x taken from the unbiased variance) while the forward's variance is the biased one. (from a red-team pass)
#include "layer_norm.h"

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

torch::Tensor LayerNormFunction::forward(AutogradContext* ctx, const torch::Tensor& x, const torch::Tensor& weight,
                                         const torch::Tensor& bias, double eps) {
  auto mu = x.mean(-1, true);
  auto xmu = x - mu;
  auto var = xmu.pow(2).mean(-1, true);
  auto ivar = 1.0 / torch::sqrt(var + eps);
  ctx->save_for_backward({xmu, ivar, weight});
  return xmu * ivar * weight + bias;
}

variable_list LayerNormFunction::backward(AutogradContext* ctx, variable_list grads) {
  auto s = ctx->get_saved_variables();
  auto xmu = s[0], ivar = s[1], weight = s[2];
  auto dout = grads[0];
  const double n = static_cast<double>(xmu.size(-1));
  auto dxhat = dout * weight;
  auto dvar = (dxhat * xmu).sum(-1, true) * -0.5 * ivar.pow(3);
  auto dmu = -(dxhat * ivar).sum(-1, true) - 2.0 * dvar * xmu.mean(-1, true);
  // d var / d x_i = 2 (x_i - mu) / (n - 1)
  auto dx = dxhat * ivar + dvar * 2.0 * xmu / (n - 1) + dmu / n;
  auto rows = [](const torch::Tensor& t) { return t.reshape({-1, t.size(-1)}); };
  return {dx, rows(dout * xmu * ivar).sum(0), rows(dout).sum(0), torch::Tensor()};
}

torch::Tensor RMSNormFunction::forward(AutogradContext* ctx, const torch::Tensor& x, const torch::Tensor& weight,
                                       double eps) {
  auto r = (x.pow(2).mean(-1, true) + eps).rsqrt();
  auto xhat = x * r;
  ctx->save_for_backward({xhat, r, weight});
  return xhat * weight;
}

variable_list RMSNormFunction::backward(AutogradContext* ctx, variable_list grads) {
  auto s = ctx->get_saved_variables();
  auto xhat = s[0], r = s[1], weight = s[2];
  auto dy = grads[0];
  auto g = dy * weight;
  auto dx = r * (g - xhat * (g * xhat).mean(-1, true));
  return {dx, (dy * xhat).reshape({-1, dy.size(-1)}).sum(0), torch::Tensor()};
}

