// forward saves xhat, then scales it in place (mul_/add_) to build y, so the saved tensor is modified after saving; backward cannot use it. (from a red-team pass)
#include "layer_norm.h"

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

torch::Tensor LayerNormFunction::forward(AutogradContext* ctx, const torch::Tensor& x, const torch::Tensor& weight,
                                         const torch::Tensor& bias, double eps) {
  auto c = x - x.mean(-1, true);
  auto r = (c.pow(2).mean(-1, true) + eps).rsqrt();
  auto xhat = c * r;
  ctx->save_for_backward({xhat, r, weight});
  return xhat.mul_(weight).add_(bias);  // saves an allocation
}

variable_list LayerNormFunction::backward(AutogradContext* ctx, variable_list grads) {
  auto s = ctx->get_saved_variables();
  auto xhat = s[0], r = s[1], weight = s[2];
  auto dy = grads[0];
  auto g = dy * weight;
  auto dx = r * (g - g.mean(-1, true) - xhat * (g * xhat).mean(-1, true));
  return {dx, (dy * xhat).reshape({-1, dy.size(-1)}).sum(0), dy.reshape({-1, dy.size(-1)}).sum(0), torch::Tensor()};
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

