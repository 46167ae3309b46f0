// one shared dL/dx helper always subtracts mean(g), the LayerNorm mean path, also for RMSNorm which has no mean. (from a red-team pass)
#include "layer_norm.h"

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

namespace {
torch::Tensor grad_input(const torch::Tensor& dy, const torch::Tensor& weight, const torch::Tensor& xhat,
                         const torch::Tensor& r) {
  auto g = dy * weight;
  return r * (g - g.mean(-1, true) - xhat * (g * xhat).mean(-1, true));
}
torch::Tensor per_feature(const torch::Tensor& t) { return t.reshape({-1, t.size(-1)}).sum(0); }
}  // namespace

torch::Tensor LayerNormFunction::forward(AutogradContext* ctx, const torch::Tensor& x, const torch::Tensor& weight,
                                         const torch::Tensor& bias, double eps) {
  auto c = x - x.mean(-1, true);
  auto r = (c.pow(2).mean(-1, true) + eps).rsqrt();
  auto xhat = c * r;
  ctx->save_for_backward({xhat, r, weight});
  return xhat * weight + bias;
}

variable_list LayerNormFunction::backward(AutogradContext* ctx, variable_list grads) {
  auto s = ctx->get_saved_variables();
  auto dy = grads[0];
  return {grad_input(dy, s[2], s[0], s[1]), per_feature(dy * s[0]), per_feature(dy), torch::Tensor()};
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
  auto dy = grads[0];
  return {grad_input(dy, s[2], s[0], s[1]), per_feature(dy * s[0]), torch::Tensor()};
}
