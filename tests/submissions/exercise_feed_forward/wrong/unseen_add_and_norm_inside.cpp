// Wrong (not in the mistake list as written): the whole "Add & Norm" of the
// block is done inside the sub-layer: layer_norm(x + FFN(x)). Both the
// residual and the LayerNorm belong to the encoder block.
#include "feed_forward.h"

PositionwiseFeedForwardImpl::PositionwiseFeedForwardImpl(int64_t d_model, int64_t d_ff, double dropout) {
  linear1 = register_module("linear1", torch::nn::Linear(d_model, d_ff));
  linear2 = register_module("linear2", torch::nn::Linear(d_ff, d_model));
  this->dropout = register_module("dropout", torch::nn::Dropout(dropout));
}

torch::Tensor PositionwiseFeedForwardImpl::forward(const torch::Tensor& x) {
  auto update = linear2(dropout(torch::gelu(linear1(x))));
  auto sum = x + update;
  auto mean = sum.mean(-1, /*keepdim=*/true);
  auto var = (sum - mean).pow(2).mean(-1, /*keepdim=*/true);
  return (sum - mean) / torch::sqrt(var + 1e-5);
}
