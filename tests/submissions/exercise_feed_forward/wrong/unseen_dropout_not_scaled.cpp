// Wrong (not in the mistake list): a hand-made dropout mask without the
// 1 / (1 - p) scaling of the survivors.
#include "feed_forward.h"

PositionwiseFeedForwardImpl::PositionwiseFeedForwardImpl(int64_t d_model, int64_t d_ff, double dropout) {
  linear1 = register_module("linear1", torch::nn::Linear(d_model, d_ff));
  linear2 = register_module("linear2", torch::nn::Linear(d_ff, d_model));
  this->dropout = register_module("dropout", torch::nn::Dropout(dropout));
}

torch::Tensor PositionwiseFeedForwardImpl::forward(const torch::Tensor& x) {
  auto h = torch::gelu(linear1(x));
  if (is_training()) h = h * (torch::rand_like(h) >= dropout->options.p()).to(h.scalar_type());
  return linear2(h);
}
