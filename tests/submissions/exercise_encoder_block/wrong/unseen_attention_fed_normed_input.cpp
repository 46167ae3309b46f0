// Wrong, a mistake nobody listed: half pre-LN. Attention is given norm1(x)
// and the residual sum is normalised by norm1 again, as if both orders were
// wanted at once. The attention sub-layer itself is right; what it is fed is
// not.
#include "encoder_block.h"

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
  torch::Tensor ignore;
  if (mask.defined()) ignore = mask.logical_not().flatten(1);
  auto normed = norm1(x).transpose(0, 1);
  auto attended = std::get<0>(self_attn(normed, normed, normed, ignore)).transpose(0, 1);
  auto h = norm1(x + dropout1(attended));
  return norm2(h + dropout2(linear2(dropout(torch::gelu(linear1(h))))));
}
