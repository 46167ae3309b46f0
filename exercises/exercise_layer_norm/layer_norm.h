// Fixed interface for exercise_layer_norm. Do not edit: the grader compiles
// your layer_norm.cpp against this header.
#pragma once

#include <torch/csrc/autograd/custom_function.h>
#include <torch/types.h>

// LayerNorm and RMSNorm over the last dimension, each a custom autograd
// Function: you write forward() and, by hand, backward(). x has shape (..., D);
// weight and bias have shape (D). Each position (every index of the leading
// dimensions) is normalised on its own, over its D features:
//
//   LayerNorm: as torch::nn::LayerNorm computes it with normalized_shape {D},
//              with a learned weight and bias per feature
//   RMSNorm:   as LLaMA uses it (PyTorch's torch.nn.RMSNorm), with a learned
//              weight per feature
//
// forward returns y with x's shape, dtype and device. The grader calls
// LayerNormFunction::apply(x, weight, bias, eps) and RMSNormFunction::apply(x,
// weight, eps), then backward through them: forward runs with autograd off, so
// every gradient is your backward's.
struct LayerNormFunction : public torch::autograd::Function<LayerNormFunction> {
  static torch::Tensor forward(torch::autograd::AutogradContext* ctx, const torch::Tensor& x,
                               const torch::Tensor& weight, const torch::Tensor& bias, double eps);
  // grad_outputs[0] is dL/dy. Returns one gradient per input of forward, in
  // its order, each of its input's shape: dL/dx, dL/dweight, dL/dbias, and an
  // undefined tensor for eps.
  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grad_outputs);
};

struct RMSNormFunction : public torch::autograd::Function<RMSNormFunction> {
  static torch::Tensor forward(torch::autograd::AutogradContext* ctx, const torch::Tensor& x,
                               const torch::Tensor& weight, double eps);
  // Returns dL/dx, dL/dweight (each of its input's shape), and an undefined
  // tensor for eps.
  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grad_outputs);
};
