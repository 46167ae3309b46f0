// The grader's trusted LayerNorm and RMSNorm over the last dimension, forward
// and backward in closed form (float64), for exercise_layer_norm:
//
//   LayerNorm: y = (x - mean) / sqrt(var + eps) * weight + bias, var biased (/D)
//   RMSNorm:   y = x / sqrt(mean(x^2) + eps) * weight
//
// The backward is written out, not taken from autograd, so that a learner's
// hand-written backward can be compared term by term; tests/reference_test.cpp
// checks both directions against LibTorch (at::layer_norm and autograd). The
// variant defaults to the correct computation; the grader bends one field at
// a time to replay a known learner mistake.
#pragma once

#include <ATen/core/Tensor.h>

namespace reference {

enum class Norm { layer, rms };

struct NormVariant {
  // Forward.
  bool unbiased_variance = false;  // LayerNorm: the variance divided by D - 1
  bool eps_outside_sqrt = false;   // 1 / (sqrt(var) + eps)
  bool rms_centred = false;        // RMSNorm: the mean subtracted first (a LayerNorm without bias)
  bool rms_sum_of_squares = false; // RMSNorm: sqrt(sum(x^2) + eps), no 1/D
  // Backward (the forward unchanged).
  bool no_mean_term = false;       // dx without the term from the mean (LayerNorm)
  bool no_variance_term = false;   // dx without the term through the variance (or the mean square)
  bool param_grads_averaged = false;  // dweight and dbias averaged over the positions, not summed
};

// x: (..., D); weight, bias: (D); bias undefined for RMSNorm.
at::Tensor norm_forward(Norm norm, const at::Tensor& x, const at::Tensor& weight, const at::Tensor& bias, double eps,
                        const NormVariant& variant = {});

struct NormGradients {
  at::Tensor x, weight, bias;  // bias undefined for RMSNorm
};

// The gradients of sum(grad_output * norm_forward(...)) with respect to x,
// weight and bias. A variant's backward fields bend the gradients; its forward
// fields give the parameter gradients of that bent forward (dx then is the
// closed form at the bent statistics, not the bent forward's derivative).
NormGradients norm_backward(Norm norm, const at::Tensor& x, const at::Tensor& weight, const at::Tensor& bias,
                            double eps, const at::Tensor& grad_output, const NormVariant& variant = {});

}  // namespace reference
