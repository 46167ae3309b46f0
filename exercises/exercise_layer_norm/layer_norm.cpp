// exercise_layer_norm: LayerNorm and RMSNorm as custom autograd Functions,
// with the backward written by hand.
// Read README.md in this folder, then run:  ./grade exercise_layer_norm
#include "layer_norm.h"

torch::Tensor LayerNormFunction::forward(torch::autograd::AutogradContext* ctx, const torch::Tensor& x,
                                         const torch::Tensor& weight, const torch::Tensor& bias, double eps) {
  // 1. mean and variance of each position over the last dimension (keepdim; the variance divided by D).
  // 2. xhat = (x - mean) / sqrt(variance + eps).
  // 3. save what backward needs (ctx->save_for_backward), return xhat * weight + bias.
  TORCH_CHECK(false, "not implemented yet: LayerNormFunction::forward (edit exercises/exercise_layer_norm/layer_norm.cpp)");
}

torch::autograd::variable_list LayerNormFunction::backward(torch::autograd::AutogradContext* ctx,
                                                           torch::autograd::variable_list grad_outputs) {
  // 1. read back what forward saved (ctx->get_saved_variables()); grad_outputs[0] is dL/dy.
  // 2. dL/dx: the direct path, the path through the mean, the path through the variance.
  // 3. dL/dweight and dL/dbias: one entry per feature, over every position.
  // 4. return {dL/dx, dL/dweight, dL/dbias, torch::Tensor()} (nothing for eps).
  TORCH_CHECK(false, "not implemented yet: LayerNormFunction::backward");
}

torch::Tensor RMSNormFunction::forward(torch::autograd::AutogradContext* ctx, const torch::Tensor& x,
                                       const torch::Tensor& weight, double eps) {
  // 1. the mean of x^2 over the last dimension; no mean is subtracted.
  // 2. xhat = x / sqrt(mean(x^2) + eps); save what backward needs; return xhat * weight.
  TORCH_CHECK(false, "not implemented yet: RMSNormFunction::forward");
}

torch::autograd::variable_list RMSNormFunction::backward(torch::autograd::AutogradContext* ctx,
                                                         torch::autograd::variable_list grad_outputs) {
  // 1. dL/dx: the direct path and the path through the mean square.
  // 2. dL/dweight over every position; return {dL/dx, dL/dweight, torch::Tensor()}.
  TORCH_CHECK(false, "not implemented yet: RMSNormFunction::backward");
}
