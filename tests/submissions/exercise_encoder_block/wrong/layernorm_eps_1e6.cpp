// Wrong (written blind): both LayerNorms use epsilon 1e-6 (a common value in
// other code bases) instead of LibTorch's default 1e-5 that the statement fixes.
// The difference is small but not float32 rounding, and nothing is detached.
#include "encoder_block.h"

EncoderBlockImpl::EncoderBlockImpl(int64_t d_model, int64_t num_heads, int64_t d_ff, double dropout) {
  self_attn = register_module(
      "self_attn", torch::nn::MultiheadAttention(torch::nn::MultiheadAttentionOptions(d_model, num_heads)));
  linear1 = register_module("linear1", torch::nn::Linear(d_model, d_ff));
  linear2 = register_module("linear2", torch::nn::Linear(d_ff, d_model));
  norm1 = register_module("norm1", torch::nn::LayerNorm(torch::nn::LayerNormOptions({d_model}).eps(1e-6)));
  norm2 = register_module("norm2", torch::nn::LayerNorm(torch::nn::LayerNormOptions({d_model}).eps(1e-6)));
  this->dropout = register_module("dropout", torch::nn::Dropout(dropout));
  dropout1 = register_module("dropout1", torch::nn::Dropout(dropout));
  dropout2 = register_module("dropout2", torch::nn::Dropout(dropout));
}

torch::Tensor EncoderBlockImpl::forward(const torch::Tensor& x, const torch::Tensor& mask) {
  torch::Tensor key_padding_mask;
  if (mask.defined()) key_padding_mask = (mask == 0).reshape({x.size(0), x.size(1)});

  auto seq_first = x.transpose(0, 1);
  auto attended = std::get<0>(self_attn->forward(seq_first, seq_first, seq_first, key_padding_mask)).transpose(0, 1);

  auto h = norm1->forward(x + dropout1->forward(attended));

  auto ffn = linear2->forward(dropout->forward(torch::gelu(linear1->forward(h))));
  return norm2->forward(h + dropout2->forward(ffn));
}
