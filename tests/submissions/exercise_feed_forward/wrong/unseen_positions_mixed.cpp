// Wrong (not in the mistake list): flattened to (B * N, d_model) and viewed
// back as (N, B, d_model) then transposed: positions and batch elements swap
// places.
#include "feed_forward.h"

PositionwiseFeedForwardImpl::PositionwiseFeedForwardImpl(int64_t d_model, int64_t d_ff, double dropout) {
  linear1 = register_module("linear1", torch::nn::Linear(d_model, d_ff));
  linear2 = register_module("linear2", torch::nn::Linear(d_ff, d_model));
  this->dropout = register_module("dropout", torch::nn::Dropout(dropout));
}

torch::Tensor PositionwiseFeedForwardImpl::forward(const torch::Tensor& x) {
  const auto b = x.size(0), n = x.size(1);
  auto flat = x.reshape({b * n, -1});
  auto out = linear2(dropout(torch::gelu(linear1(flat))));
  return out.view({n, b, -1}).transpose(0, 1);
}
