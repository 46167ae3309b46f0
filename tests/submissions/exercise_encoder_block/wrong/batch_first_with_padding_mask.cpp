// WRONG: x goes to MultiheadAttention as (B, N, D), so LibTorch takes the
// batch for the sequence; the padding mask is right for (B, N) and is
// refused only because attention now believes the batch has N elements.
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
  torch::Tensor padded;
  if (mask.defined()) padded = mask.view({x.size(0), x.size(1)}) == 0;
  auto attended = std::get<0>(self_attn->forward(x, x, x, padded));
  auto h = norm1->forward(x + dropout1->forward(attended));
  auto inner = dropout->forward(torch::gelu(linear1->forward(h)));
  return norm2->forward(h + dropout2->forward(linear2->forward(inner)));
}
