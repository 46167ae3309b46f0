// Accepted: positions flattened to (B * N, d_model) and back (which keeps them
// apart), and the functional GELU with its exact default.
#include "feed_forward.h"

#include <torch/nn/functional/activation.h>

PositionwiseFeedForwardImpl::PositionwiseFeedForwardImpl(int64_t d_model, int64_t d_ff, double dropout) {
  linear1 = register_module("linear1", torch::nn::Linear(d_model, d_ff));
  linear2 = register_module("linear2", torch::nn::Linear(d_ff, d_model));
  this->dropout = register_module("dropout", torch::nn::Dropout(dropout));
}

torch::Tensor PositionwiseFeedForwardImpl::forward(const torch::Tensor& x) {
  const auto sizes = x.sizes().vec();
  auto flat = x.reshape({-1, sizes.back()});
  auto h = torch::nn::functional::gelu(linear1->forward(flat), torch::nn::functional::GELUFuncOptions().approximate("none"));
  auto out = linear2->forward(dropout->forward(h));
  return out.reshape(sizes);
}
