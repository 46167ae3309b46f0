// Wrong (not in the mistake list): norm1 is the registered module, but the
// second LayerNorm is called through layer_norm with norm2's weight and bias
// and an epsilon of 1e-6 typed by hand. Only norm2's epsilon differs: the
// results move by ~1e-5, which no known mistake replays.
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
  const int64_t batch = x.size(0), tokens = x.size(1), width = x.size(2);
  torch::Tensor ignored_keys;
  if (mask.defined()) ignored_keys = mask.reshape({batch, tokens}).eq(0);
  auto seq = x.transpose(0, 1);
  auto attn = std::get<0>(self_attn->forward(seq, seq, seq, ignored_keys)).transpose(0, 1);
  auto h = norm1->forward(x + dropout1->forward(attn));
  auto hidden = dropout->forward(torch::gelu(linear1->forward(h)));
  auto sum = h + dropout2->forward(linear2->forward(hidden));
  return torch::layer_norm(sum, {width}, norm2->weight, norm2->bias, /*eps=*/1e-6);
}
