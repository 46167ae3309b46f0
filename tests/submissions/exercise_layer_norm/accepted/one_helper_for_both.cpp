// One pair of helpers serves both norms: RMSNorm is the uncentred case, the
// flag travelling in saved_data; the mean term is added only when centred.
#include "layer_norm.h"

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

namespace {

torch::Tensor normalise(AutogradContext* ctx, const torch::Tensor& x, const torch::Tensor& weight, double eps,
                        bool centre) {
  auto shifted = centre ? x - x.mean(-1, true) : x;
  auto scale = torch::rsqrt(shifted.square().mean(-1, true) + eps);
  auto xhat = shifted * scale;
  ctx->save_for_backward({xhat, scale, weight});
  ctx->saved_data["centre"] = centre;
  return xhat * weight;
}

// dL/dx and dL/dweight of y = normalise(x) * weight.
std::pair<torch::Tensor, torch::Tensor> gradients(AutogradContext* ctx, const torch::Tensor& dy) {
  auto saved = ctx->get_saved_variables();
  auto xhat = saved[0], scale = saved[1], weight = saved[2];
  auto g = dy * weight;
  auto projected = g - xhat * (g * xhat).mean(-1, true);
  if (ctx->saved_data["centre"].toBool()) projected = projected - g.mean(-1, true);
  auto per_feature = (dy * xhat).reshape({-1, dy.size(-1)}).sum(0);
  return {scale * projected, per_feature};
}

}  // namespace

torch::Tensor LayerNormFunction::forward(AutogradContext* ctx, const torch::Tensor& x, const torch::Tensor& weight,
                                         const torch::Tensor& bias, double eps) {
  return normalise(ctx, x, weight, eps, /*centre=*/true) + bias;
}

variable_list LayerNormFunction::backward(AutogradContext* ctx, variable_list grads) {
  auto [dx, dweight] = gradients(ctx, grads[0]);
  auto dbias = grads[0].reshape({-1, grads[0].size(-1)}).sum(0);
  return {dx, dweight, dbias, torch::Tensor()};
}

torch::Tensor RMSNormFunction::forward(AutogradContext* ctx, const torch::Tensor& x, const torch::Tensor& weight,
                                       double eps) {
  return normalise(ctx, x, weight, eps, /*centre=*/false);
}

variable_list RMSNormFunction::backward(AutogradContext* ctx, variable_list grads) {
  auto [dx, dweight] = gradients(ctx, grads[0]);
  return {dx, dweight, torch::Tensor()};
}
