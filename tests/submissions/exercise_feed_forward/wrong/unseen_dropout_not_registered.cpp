// Wrong (not in the mistake list): the Dropout is assigned but never
// registered, so module->eval() does not reach it: it keeps dropping in eval
// mode.
#include "feed_forward.h"

PositionwiseFeedForwardImpl::PositionwiseFeedForwardImpl(int64_t d_model, int64_t d_ff, double dropout) {
  linear1 = register_module("linear1", torch::nn::Linear(d_model, d_ff));
  linear2 = register_module("linear2", torch::nn::Linear(d_ff, d_model));
  this->dropout = torch::nn::Dropout(dropout);
}

torch::Tensor PositionwiseFeedForwardImpl::forward(const torch::Tensor& x) {
  return linear2(dropout(torch::gelu(linear1(x))));
}
