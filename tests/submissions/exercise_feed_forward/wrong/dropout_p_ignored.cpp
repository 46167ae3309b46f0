// Wrong: the dropout probability is hard-coded to 0.1, whatever the constructor says.
#include "feed_forward.h"

PositionwiseFeedForwardImpl::PositionwiseFeedForwardImpl(int64_t d_model, int64_t d_ff, double dropout) {
  linear1 = register_module("linear1", torch::nn::Linear(d_model, d_ff));
  linear2 = register_module("linear2", torch::nn::Linear(d_ff, d_model));
  this->dropout = register_module("dropout", torch::nn::Dropout(0.1));
}

torch::Tensor PositionwiseFeedForwardImpl::forward(const torch::Tensor& x) {
  return linear2(dropout(torch::gelu(linear1(x))));
}
