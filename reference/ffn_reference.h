// The grader's trusted position-wise feed-forward network (the transformer's
// FFN sub-layer), in eval mode (dropout is the identity there):
//
//   FFN(x) = linear2(activation(linear1(x)))
//
// Parameters by the names the learner's module registers: linear1.weight
// (d_ff, d_model), linear1.bias, linear2.weight (d_model, d_ff), linear2.bias.
// Tested in tests/reference_test.cpp against torch::nn::Linear and at::gelu.
// The variant defaults to the correct network; the grader bends one field at
// a time to replay a known learner mistake.
#pragma once

#include <ATen/core/Tensor.h>

#include <map>
#include <string>

namespace reference {

enum class Activation { gelu, gelu_tanh, relu, silu, none };

struct FeedForwardVariant {
  Activation activation = Activation::gelu;  // exact GELU: x * Phi(x), with erf
  bool residual = false;                     // x + FFN(x): the block's residual inside the sub-layer
  // layer_norm over d_model (no weight or bias, eps 1e-5) of what it returns
  // (after the residual, when that is inside too): the block's LayerNorm inside the sub-layer.
  bool normalised_output = false;
};

// The activation alone, for any floating tensor.
at::Tensor activate(const at::Tensor& x, Activation activation);

at::Tensor feed_forward(const at::Tensor& x, const std::map<std::string, at::Tensor>& parameters,
                        const FeedForwardVariant& variant = {});

}  // namespace reference
