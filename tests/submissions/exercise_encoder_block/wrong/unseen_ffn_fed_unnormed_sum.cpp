// Wrong (not in the mistake list as written): the FFN is given the residual
// sum before norm1, while the residual around it adds the normalised h. Each
// sub-layer is right; the second one is fed the wrong tensor.
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
  torch::Tensor key_padding;
  if (mask.defined()) key_padding = (mask == 0).reshape({x.size(0), x.size(1)});
  auto tokens_first = x.transpose(0, 1);
  auto attention = std::get<0>(self_attn->forward(tokens_first, tokens_first, tokens_first, key_padding));
  auto residual = x + dropout1->forward(attention.transpose(0, 1));
  auto h = norm1->forward(residual);
  auto ffn = linear2->forward(dropout->forward(torch::gelu(linear1->forward(residual))));
  return norm2->forward(h + dropout2->forward(ffn));
}
