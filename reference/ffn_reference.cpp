#include "ffn_reference.h"

#include <ATen/ATen.h>

#include <cmath>

namespace reference {

at::Tensor activate(const at::Tensor& x, Activation activation) {
  switch (activation) {
    case Activation::gelu:
      return x * 0.5 * (1 + at::erf(x / std::sqrt(2.0)));
    case Activation::gelu_tanh:
      return x * 0.5 * (1 + at::tanh(std::sqrt(2.0 / M_PI) * (x + 0.044715 * x.pow(3))));
    case Activation::relu:
      return at::relu(x);
    case Activation::silu:
      return x * at::sigmoid(x);
    case Activation::none:
      return x;
  }
  return x;
}

at::Tensor feed_forward(const at::Tensor& x, const std::map<std::string, at::Tensor>& parameters,
                        const FeedForwardVariant& variant) {
  auto hidden = at::linear(x, parameters.at("linear1.weight"), parameters.at("linear1.bias"));
  auto output =
      at::linear(activate(hidden, variant.activation), parameters.at("linear2.weight"), parameters.at("linear2.bias"));
  if (variant.residual) output = x + output;
  return variant.normalised_output ? at::layer_norm(output, {output.size(-1)}) : output;
}

}  // namespace reference
