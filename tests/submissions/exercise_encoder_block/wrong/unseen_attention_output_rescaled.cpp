// Wrong, a mistake nobody listed: the attention output is divided by
// sqrt(d_model) before the residual sum ("attention is scaled, isn't it?").
// The scaling inside MultiheadAttention is already right; this extra factor
// only shrinks the sub-layer's contribution.
#include "encoder_block.h"

#include <cmath>

EncoderBlockImpl::EncoderBlockImpl(int64_t d_model, int64_t num_heads, int64_t d_ff, double dropout) {
  self_attn = register_module(
      "self_attn", torch::nn::MultiheadAttention(torch::nn::MultiheadAttentionOptions(d_model, num_heads)));
  linear1 = register_module("linear1", torch::nn::Linear(d_model, d_ff));
  linear2 = register_module("linear2", torch::nn::Linear(d_ff, d_model));
  norm1 = register_module("norm1", torch::nn::LayerNorm(torch::nn::LayerNormOptions({d_model})));
  norm2 = register_module("norm2", torch::nn::LayerNorm(torch::nn::LayerNormOptions({d_model})));
  this->dropout = register_module("dropout", torch::nn::Dropout(dropout));
  dropout1 = register_module("dropout1", torch::nn::Dropout(dropout));
  dropout2 = register_module("dropout2", torch::nn::Dropout(dropout));
}

torch::Tensor EncoderBlockImpl::forward(const torch::Tensor& x, const torch::Tensor& mask) {
  torch::Tensor padding;
  if (mask.defined()) padding = (mask == 0).reshape({x.size(0), x.size(1)});
  auto tokens_first = x.transpose(0, 1);
  auto [attended, weights] = self_attn->forward(tokens_first, tokens_first, tokens_first, padding);
  attended = attended.transpose(0, 1) / std::sqrt(static_cast<double>(x.size(-1)));
  auto h = norm1(x + dropout1(attended));
  auto hidden = dropout(torch::gelu(linear1(h)));
  return norm2(h + dropout2(linear2(hidden)));
}
