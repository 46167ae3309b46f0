// Fixed interface for exercise_layer_norm. Do not edit: the grader compiles
// your layer_norm.cpp against this header.
#pragma once

#include <torch/csrc/autograd/custom_function.h>
#include <torch/types.h>

// LayerNorm and RMSNorm over the last dimension, each a custom autograd
// Function: you write forward() and, by hand, backward(). For x of shape
// (..., D), weight and bias of shape (D), per position (every index of the
// leading dimensions):
//
//   LayerNorm: y = (x - mean(x)) / sqrt(var(x) + eps) * weight + bias
//   RMSNorm:   y = x / sqrt(mean(x^2) + eps) * weight
//
// mean, var and mean(x^2) are over the last dimension; var is the biased one
// (divided by D). The grader calls LayerNormFunction::apply(x, weight, bias,
// eps) and RMSNormFunction::apply(x, weight, eps), then backward through
// them: forward runs with autograd off, so every gradient is your backward's.
struct LayerNormFunction : public torch::autograd::Function<LayerNormFunction> {
  static torch::Tensor forward(torch::autograd::AutogradContext* ctx, const torch::Tensor& x,
                               const torch::Tensor& weight, const torch::Tensor& bias, double eps);
  // grad_outputs[0] is dL/dy. Returns one gradient per input of forward, in
  // its order: dL/dx, dL/dweight, dL/dbias, and an undefined tensor for eps.
  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grad_outputs);
};

struct RMSNormFunction : public torch::autograd::Function<RMSNormFunction> {
  static torch::Tensor forward(torch::autograd::AutogradContext* ctx, const torch::Tensor& x,
                               const torch::Tensor& weight, double eps);
  // Returns dL/dx, dL/dweight, and an undefined tensor for eps.
  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grad_outputs);
};
