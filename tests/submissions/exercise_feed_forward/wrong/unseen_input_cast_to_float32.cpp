// Wrong (not in the mistake list): the input is cast to float32 "for speed";
// a float64 module then multiplies float32 activations by float64 weights.
#include "feed_forward.h"

PositionwiseFeedForwardImpl::PositionwiseFeedForwardImpl(int64_t d_model, int64_t d_ff, double dropout) {
  linear1 = register_module("linear1", torch::nn::Linear(d_model, d_ff));
  linear2 = register_module("linear2", torch::nn::Linear(d_ff, d_model));
  this->dropout = register_module("dropout", torch::nn::Dropout(dropout));
}

torch::Tensor PositionwiseFeedForwardImpl::forward(const torch::Tensor& x) {
  auto h = torch::gelu(linear1(x.to(torch::kFloat32)));
  return linear2(dropout(h));
}
