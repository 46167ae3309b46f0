// Adds eps after the square root in both norms, and averages the parameter
// gradients over the positions instead of summing them: two independent mistakes.
#include "layer_norm.h"

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

namespace {
torch::Tensor rows(const torch::Tensor& t) { return t.reshape({-1, t.size(-1)}); }
}  // namespace

torch::Tensor LayerNormFunction::forward(AutogradContext* ctx, const torch::Tensor& x, const torch::Tensor& weight,
                                         const torch::Tensor& bias, double eps) {
  const auto d = static_cast<double>(x.size(-1));
  auto r = rows(x);
  auto mu = r.sum(1, true) / d;
  auto centred = r - mu;
  auto sigma = torch::sqrt(centred.pow(2).sum(1, true) / d) + eps;
  auto xhat = centred / sigma;
  ctx->save_for_backward({xhat, sigma, weight});
  return (xhat * weight + bias).reshape(x.sizes());
}

variable_list LayerNormFunction::backward(AutogradContext* ctx, variable_list grads) {
  auto saved = ctx->get_saved_variables();
  auto xhat = saved[0], sigma = saved[1], weight = saved[2];
  auto dy = rows(grads[0]);
  const auto d = static_cast<double>(xhat.size(1));
  auto g = dy * weight;
  auto dx = (d * g - g.sum(1, true) - xhat * (g * xhat).sum(1, true)) / (d * sigma);
  return {dx.reshape(grads[0].sizes()), (dy * xhat).mean(0), dy.mean(0), torch::Tensor()};
}

torch::Tensor RMSNormFunction::forward(AutogradContext* ctx, const torch::Tensor& x, const torch::Tensor& weight,
                                       double eps) {
  const auto d = static_cast<double>(x.size(-1));
  auto r = rows(x);
  auto rms = torch::sqrt(r.pow(2).sum(1, true) / d) + eps;
  auto xhat = r / rms;
  ctx->save_for_backward({xhat, rms, weight});
  return (xhat * weight).reshape(x.sizes());
}

variable_list RMSNormFunction::backward(AutogradContext* ctx, variable_list grads) {
  auto saved = ctx->get_saved_variables();
  auto xhat = saved[0], rms = saved[1], weight = saved[2];
  auto dy = rows(grads[0]);
  const auto d = static_cast<double>(xhat.size(1));
  auto g = dy * weight;
  auto dx = (d * g - xhat * (g * xhat).sum(1, true)) / (d * rms);
  return {dx.reshape(grads[0].sizes()), (dy * xhat).mean(0), torch::Tensor()};
}
