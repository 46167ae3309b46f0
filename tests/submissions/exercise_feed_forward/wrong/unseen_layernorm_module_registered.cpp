// Wrong (not in the mistake list as written): the sub-layer registers a
// LayerNorm of its own ("out_norm") and applies it to linear2's output. The
// interface has no such module: the normalisation belongs to the block.
#include "feed_forward.h"

#include <torch/nn/modules/normalization.h>

PositionwiseFeedForwardImpl::PositionwiseFeedForwardImpl(int64_t d_model, int64_t d_ff, double dropout) {
  linear1 = register_module("linear1", torch::nn::Linear(d_model, d_ff));
  linear2 = register_module("linear2", torch::nn::Linear(d_ff, d_model));
  this->dropout = register_module("dropout", torch::nn::Dropout(dropout));
  register_module("out_norm", torch::nn::LayerNorm(torch::nn::LayerNormOptions({d_model})));
}

torch::Tensor PositionwiseFeedForwardImpl::forward(const torch::Tensor& x) {
  auto projected = linear2->forward(dropout->forward(torch::gelu(linear1->forward(x))));
  return named_children()["out_norm"]->as<torch::nn::LayerNorm>()->forward(projected);
}
