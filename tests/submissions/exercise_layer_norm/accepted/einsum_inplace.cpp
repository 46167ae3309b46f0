// saves x, the mean and 1/std (eps in saved_data), in-place arithmetic on fresh tensors, einsum for the parameter sums, RMS via linalg_vector_norm. (from a red-team pass)
#include "layer_norm.h"

#include <cmath>

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

torch::Tensor LayerNormFunction::forward(AutogradContext* ctx, const torch::Tensor& x, const torch::Tensor& weight,
                                         const torch::Tensor& bias, double eps) {
  auto mean = x.sum(-1, true).div_(static_cast<double>(x.size(-1)));
  auto centred = x - mean;                          // a fresh tensor: safe to modify
  auto rstd = centred.square().mean(-1, true).add_(eps).rsqrt_();
  ctx->save_for_backward({x, mean, rstd, weight});
  ctx->saved_data["eps"] = eps;
  return centred.mul_(rstd).mul_(weight).add_(bias);
}

variable_list LayerNormFunction::backward(AutogradContext* ctx, variable_list grads) {
  auto saved = ctx->get_saved_variables();
  auto x = saved[0], mean = saved[1], rstd = saved[2], weight = saved[3];
  auto dy = grads[0];
  auto xhat = (x - mean).mul_(rstd);
  auto g = dy * weight;
  auto dx = g - g.mean(-1, true);
  dx.sub_(xhat * (g * xhat).mean(-1, true)).mul_(rstd);
  auto dweight = torch::einsum("...d,...d->d", {dy, xhat});
  auto dbias = torch::einsum("...d->d", {dy});
  return {dx, dweight, dbias, torch::Tensor()};
}

torch::Tensor RMSNormFunction::forward(AutogradContext* ctx, const torch::Tensor& x, const torch::Tensor& weight,
                                       double eps) {
  const double d = static_cast<double>(x.size(-1));
  // ||x||^2 / D is the mean square.
  auto ms = torch::linalg_vector_norm(x, 2, {-1}, /*keepdim=*/true).square_().div_(d);
  auto rrms = ms.add_(eps).rsqrt_();
  ctx->save_for_backward({x, rrms, weight});
  return x * rrms * weight;
}

variable_list RMSNormFunction::backward(AutogradContext* ctx, variable_list grads) {
  auto saved = ctx->get_saved_variables();
  auto x = saved[0], rrms = saved[1], weight = saved[2];
  auto dy = grads[0];
  auto xhat = x * rrms;
  auto g = dy * weight;
  auto dx = xhat * (g * xhat).mean(-1, true);
  dx.neg_().add_(g).mul_(rrms);
  return {dx, torch::einsum("...d,...d->d", {dy, xhat}), torch::Tensor()};
}
