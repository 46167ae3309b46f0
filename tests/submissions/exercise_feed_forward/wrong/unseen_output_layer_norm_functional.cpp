// Wrong (not in the mistake list as written): the sub-layer normalises its
// own output with the functional LayerNorm (no weight, no bias), as if the
// block's Add & Norm belonged inside it. No parameter is added, so nothing
// fails to load: only the values show it.
#include "feed_forward.h"

#include <torch/nn/functional/normalization.h>

PositionwiseFeedForwardImpl::PositionwiseFeedForwardImpl(int64_t d_model, int64_t d_ff, double dropout) {
  linear1 = register_module("linear1", torch::nn::Linear(d_model, d_ff));
  linear2 = register_module("linear2", torch::nn::Linear(d_ff, d_model));
  this->dropout = register_module("dropout", torch::nn::Dropout(dropout));
}

torch::Tensor PositionwiseFeedForwardImpl::forward(const torch::Tensor& x) {
  namespace F = torch::nn::functional;
  const auto width = x.size(-1);
  auto expanded = dropout->forward(torch::gelu(linear1->forward(x)));
  return F::layer_norm(linear2->forward(expanded), F::LayerNormFuncOptions({width}));
}
