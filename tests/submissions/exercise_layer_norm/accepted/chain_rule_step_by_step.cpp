// The backward as a textbook chain rule, one intermediate at a time:
// through xhat, then the variance, then the mean.
#include "layer_norm.h"

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

torch::Tensor LayerNormFunction::forward(AutogradContext* ctx, const torch::Tensor& x, const torch::Tensor& weight,
                                         const torch::Tensor& bias, double eps) {
  auto mu = x.mean(-1, true);
  auto xmu = x - mu;
  auto var = (xmu * xmu).mean(-1, true);
  auto ivar = torch::rsqrt(var + eps);
  auto xhat = xmu * ivar;
  ctx->save_for_backward({xmu, ivar, weight});
  return weight * xhat + bias;
}

variable_list LayerNormFunction::backward(AutogradContext* ctx, variable_list grads) {
  auto saved = ctx->get_saved_variables();
  auto xmu = saved[0], ivar = saved[1], weight = saved[2];
  auto dout = grads[0];
  const double n = static_cast<double>(xmu.size(-1));
  auto xhat = xmu * ivar;
  auto dxhat = dout * weight;
  // var = mean(xmu^2), ivar = (var + eps)^(-1/2): d ivar / d var = -ivar^3 / 2.
  auto dvar = (dxhat * xmu).sum(-1, true) * (-0.5) * ivar.pow(3);
  auto dmu = (-dxhat * ivar).sum(-1, true) + dvar * (-2.0 * xmu).mean(-1, true);
  auto dx = dxhat * ivar + dvar * 2.0 * xmu / n + dmu / n;
  std::vector<int64_t> lead;
  for (int64_t i = 0; i + 1 < dout.dim(); ++i) lead.push_back(i);
  return {dx, (dout * xhat).sum(lead), dout.sum(lead), torch::Tensor()};
}

torch::Tensor RMSNormFunction::forward(AutogradContext* ctx, const torch::Tensor& x, const torch::Tensor& weight,
                                       double eps) {
  auto ms = (x * x).mean(-1, true);
  auto irms = torch::rsqrt(ms + eps);
  ctx->save_for_backward({x, irms, weight});
  return weight * (x * irms);
}

variable_list RMSNormFunction::backward(AutogradContext* ctx, variable_list grads) {
  auto saved = ctx->get_saved_variables();
  auto x = saved[0], irms = saved[1], weight = saved[2];
  auto dout = grads[0];
  const double n = static_cast<double>(x.size(-1));
  auto dxhat = dout * weight;
  // ms = mean(x^2): d irms / d ms = -irms^3 / 2, d ms / dx = 2x / n.
  auto dms = (dxhat * x).sum(-1, true) * (-0.5) * irms.pow(3);
  auto dx = dxhat * irms + dms * 2.0 * x / n;
  std::vector<int64_t> lead;
  for (int64_t i = 0; i + 1 < dout.dim(); ++i) lead.push_back(i);
  return {dx, (dout * x * irms).sum(lead), torch::Tensor()};
}
