// computes in float64 whatever the input dtype and casts back; the backward walks the rows one at a time into a preallocated result. (from a red-team pass)
#include "layer_norm.h"

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

namespace {
torch::Tensor as_rows(const torch::Tensor& t) { return t.reshape({-1, t.size(-1)}); }
}  // namespace

torch::Tensor LayerNormFunction::forward(AutogradContext* ctx, const torch::Tensor& x, const torch::Tensor& weight,
                                         const torch::Tensor& bias, double eps) {
  auto xd = x.to(torch::kDouble);
  auto mu = xd.mean(-1, true);
  auto var = (xd - mu).pow(2).mean(-1, true);
  auto xhat = (xd - mu) / (var + eps).sqrt();
  ctx->save_for_backward({x, weight});
  ctx->saved_data["eps"] = eps;
  return (xhat * weight.to(torch::kDouble) + bias.to(torch::kDouble)).to(x.scalar_type());
}

variable_list LayerNormFunction::backward(AutogradContext* ctx, variable_list grads) {
  auto saved = ctx->get_saved_variables();
  auto x = saved[0], weight = saved[1];
  const double eps = ctx->saved_data["eps"].toDouble();
  auto xr = as_rows(x.to(torch::kDouble));
  auto dyr = as_rows(grads[0].to(torch::kDouble));
  auto w = weight.to(torch::kDouble);
  auto dx = torch::empty_like(xr);
  auto dw = torch::zeros_like(w);
  auto db = torch::zeros_like(w);
  for (int64_t i = 0; i < xr.size(0); ++i) {
    auto row = xr[i];
    auto dy = dyr[i];
    auto mu = row.mean();
    auto r = ((row - mu).pow(2).mean() + eps).rsqrt();
    auto xhat = (row - mu) * r;
    auto g = dy * w;
    dx[i].copy_(r * (g - g.mean() - xhat * (g * xhat).mean()));
    dw += dy * xhat;
    db += dy;
  }
  return {dx.reshape(x.sizes()).to(x.scalar_type()), dw.to(weight.scalar_type()), db.to(weight.scalar_type()),
          torch::Tensor()};
}

torch::Tensor RMSNormFunction::forward(AutogradContext* ctx, const torch::Tensor& x, const torch::Tensor& weight,
                                       double eps) {
  auto xd = x.to(torch::kDouble);
  auto y = xd / (xd.pow(2).mean(-1, true) + eps).sqrt() * weight.to(torch::kDouble);
  ctx->save_for_backward({x, weight});
  ctx->saved_data["eps"] = eps;
  return y.to(x.scalar_type());
}

variable_list RMSNormFunction::backward(AutogradContext* ctx, variable_list grads) {
  auto saved = ctx->get_saved_variables();
  auto x = saved[0], weight = saved[1];
  const double eps = ctx->saved_data["eps"].toDouble();
  auto xr = as_rows(x.to(torch::kDouble));
  auto dyr = as_rows(grads[0].to(torch::kDouble));
  auto w = weight.to(torch::kDouble);
  auto dx = torch::empty_like(xr);
  auto dw = torch::zeros_like(w);
  for (int64_t i = 0; i < xr.size(0); ++i) {
    auto row = xr[i];
    auto r = (row.pow(2).mean() + eps).rsqrt();
    auto xhat = row * r;
    auto g = dyr[i] * w;
    dx[i].copy_(r * (g - xhat * (g * xhat).mean()));
    dw += dyr[i] * xhat;
  }
  return {dx.reshape(x.sizes()).to(x.scalar_type()), dw.to(weight.scalar_type()), torch::Tensor()};
}
