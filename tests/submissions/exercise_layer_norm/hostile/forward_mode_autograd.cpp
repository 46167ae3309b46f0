// HOSTILE (round-5 red team): both backwards take dL/dx from autograd's
// forward mode: the Jacobians of LayerNorm and RMSNorm are symmetric, so dL/dx
// is one Jacobian-vector product with tangent w * g, computed from a dual
// tensor (at::_make_dual / _unpack_dual, the level from ForwardADLevel). None of
// the reverse-mode symbols the exercise forbade is imported.
#include "layer_norm.h"

#include <torch/csrc/autograd/forward_grad.h>

namespace {

torch::Tensor sum_over_positions(const torch::Tensor& t) { return t.reshape({-1, t.size(-1)}).sum(0); }

torch::Tensor layer_normalised(const torch::Tensor& x, double eps) {
  auto centred = x - x.mean(-1, true);
  return centred * (centred.pow(2).mean(-1, true) + eps).rsqrt();
}

torch::Tensor rms_normalised(const torch::Tensor& x, double eps) {
  return x * (x.pow(2).mean(-1, true) + eps).rsqrt();
}

// The Jacobian of `f` at x applied to `tangent`, by forward-mode autograd.
template <typename F>
torch::Tensor jvp(F f, const torch::Tensor& x, const torch::Tensor& tangent) {
  const auto level = torch::autograd::ForwardADLevel::get_next_idx();
  auto dual = at::_make_dual(x.detach(), tangent.detach().contiguous(), static_cast<int64_t>(level));
  auto out = f(dual);
  auto tangent_out = std::get<1>(at::_unpack_dual(out, static_cast<int64_t>(level))).clone();
  torch::autograd::ForwardADLevel::release_idx(level);
  return tangent_out;
}

}  // namespace

torch::Tensor LayerNormFunction::forward(torch::autograd::AutogradContext* ctx, const torch::Tensor& x,
                                         const torch::Tensor& weight, const torch::Tensor& bias, double eps) {
  auto normalised = layer_normalised(x, eps);
  ctx->save_for_backward({x, normalised, weight});
  ctx->saved_data["eps"] = eps;
  return normalised * weight + bias;
}

torch::autograd::variable_list LayerNormFunction::backward(torch::autograd::AutogradContext* ctx,
                                                           torch::autograd::variable_list grad_outputs) {
  auto saved = ctx->get_saved_variables();
  const double eps = ctx->saved_data["eps"].toDouble();
  const auto& grad = grad_outputs[0];
  auto grad_x = jvp([eps](const torch::Tensor& t) { return layer_normalised(t, eps); }, saved[0], grad * saved[2]);
  return {grad_x, sum_over_positions(grad * saved[1]), sum_over_positions(grad), torch::Tensor()};
}

torch::Tensor RMSNormFunction::forward(torch::autograd::AutogradContext* ctx, const torch::Tensor& x,
                                       const torch::Tensor& weight, double eps) {
  auto normalised = rms_normalised(x, eps);
  ctx->save_for_backward({x, normalised, weight});
  ctx->saved_data["eps"] = eps;
  return normalised * weight;
}

torch::autograd::variable_list RMSNormFunction::backward(torch::autograd::AutogradContext* ctx,
                                                         torch::autograd::variable_list grad_outputs) {
  auto saved = ctx->get_saved_variables();
  const double eps = ctx->saved_data["eps"].toDouble();
  const auto& grad = grad_outputs[0];
  auto grad_x = jvp([eps](const torch::Tensor& t) { return rms_normalised(t, eps); }, saved[0], grad * saved[2]);
  return {grad_x, sum_over_positions(grad * saved[1]), torch::Tensor()};
}
