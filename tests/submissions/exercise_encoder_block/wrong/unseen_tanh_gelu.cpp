// Wrong (sublayers): the FFN uses the tanh approximation of GELU (as GPT-2
// does); the statement's block uses the exact GELU.
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
  if (mask.defined()) ignore = mask.to(torch::kBool).logical_not().squeeze(1).squeeze(1);
  auto seq = x.permute({1, 0, 2});
  auto attn = std::get<0>(self_attn->forward(seq, seq, seq, ignore, /*need_weights=*/false)).permute({1, 0, 2});
  auto y = norm1->forward(x + dropout1->forward(attn));
  return norm2->forward(y + dropout2->forward(linear2->forward(dropout->forward(torch::gelu(linear1->forward(y), "tanh")))));
}
