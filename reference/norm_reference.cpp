#include "norm_reference.h"

#include <ATen/ATen.h>

namespace reference {

namespace {

// The statistics of the last dimension: the centred (or raw, for RMSNorm)
// input and the reciprocal of its spread, kept broadcastable.
struct Statistics {
  at::Tensor centred;     // x - mean (LayerNorm), x (RMSNorm)
  at::Tensor reciprocal;  // 1 / sqrt(var + eps), 1 / sqrt(mean(x^2) + eps)
};

Statistics statistics(Norm norm, const at::Tensor& x, double eps, const NormVariant& variant) {
  const auto d = static_cast<double>(x.size(-1));
  const bool centre = norm == Norm::layer || variant.rms_centred;
  auto centred = centre ? x - x.mean(-1, /*keepdim=*/true) : x;
  at::Tensor spread;
  if (norm == Norm::layer) {
    spread = centred.pow(2).sum(-1, true) / (variant.unbiased_variance ? d - 1 : d);
  } else {
    spread = centred.pow(2).sum(-1, true) / (variant.rms_sum_of_squares ? 1.0 : d);
  }
  auto reciprocal = variant.eps_outside_sqrt ? 1 / (spread.sqrt() + eps) : (spread + eps).rsqrt();
  return {centred, reciprocal};
}

// Sums over every dimension but the last: a per-feature gradient.
at::Tensor per_feature(const at::Tensor& t, bool averaged) {
  auto flat = t.reshape({-1, t.size(-1)});
  return averaged ? flat.mean(0) : flat.sum(0);
}

}  // namespace

at::Tensor norm_forward(Norm norm, const at::Tensor& x, const at::Tensor& weight, const at::Tensor& bias, double eps,
                        const NormVariant& variant) {
  const auto s = statistics(norm, x, eps, variant);
  auto y = s.centred * s.reciprocal * weight;
  return norm == Norm::layer ? y + bias : y;
}

NormGradients norm_backward(Norm norm, const at::Tensor& x, const at::Tensor& weight, const at::Tensor& bias,
                            double eps, const at::Tensor& grad_output, const NormVariant& variant) {
  // The statistics of the forward the variant describes: with a forward bend
  // the parameter gradients are those of that forward (exactly), while dx is
  // the closed form below evaluated at its statistics, which is the derivative
  // of the correct forward only.
  const auto s = statistics(norm, x, eps, variant);
  const auto normalised = s.centred * s.reciprocal;
  // With g = grad_output * weight, the gradient through the normalised input:
  //   LayerNorm: dx = r * (g - mean(g) - xhat * mean(g * xhat))
  //   RMSNorm:   dx = r * (g - xhat * mean(g * xhat))
  const auto g = grad_output * weight;
  auto inner = g;
  if (norm == Norm::layer && !variant.no_mean_term) inner = inner - g.mean(-1, true);
  if (!variant.no_variance_term) inner = inner - normalised * (g * normalised).mean(-1, true);
  NormGradients out;
  out.x = s.reciprocal * inner;
  out.weight = per_feature(grad_output * normalised, variant.param_grads_averaged);
  if (norm == Norm::layer) out.bias = per_feature(grad_output, variant.param_grads_averaged);
  (void)bias;
  return out;
}

}  // namespace reference
