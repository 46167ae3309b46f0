// Wrong: the linear layers have no bias.
#include "feed_forward.h"

PositionwiseFeedForwardImpl::PositionwiseFeedForwardImpl(int64_t d_model, int64_t d_ff, double dropout) {
  linear1 = register_module("linear1", torch::nn::Linear(torch::nn::LinearOptions(d_model, d_ff).bias(false)));
  linear2 = register_module("linear2", torch::nn::Linear(torch::nn::LinearOptions(d_ff, d_model).bias(false)));
  this->dropout = register_module("dropout", torch::nn::Dropout(dropout));
}

torch::Tensor PositionwiseFeedForwardImpl::forward(const torch::Tensor& x) {
  return linear2(dropout(torch::gelu(linear1(x))));
}
