// Wrong, a mistake nobody listed: the FFN is given the block's input x
// instead of h, the first sub-layer's normalised residual sum (a variable
// mix-up). Each sub-layer on its own is right; what the second one is fed is
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
  torch::Tensor padding;
  if (mask.defined()) padding = (mask == 0).reshape({x.size(0), x.size(1)});
  auto seq = x.transpose(0, 1);
  auto attended = std::get<0>(self_attn->forward(seq, seq, seq, padding)).transpose(0, 1);
  auto h = norm1(x + dropout1(attended));
  auto ffn = linear2(dropout(torch::gelu(linear1(x))));
  return norm2(h + dropout2(ffn));
}
