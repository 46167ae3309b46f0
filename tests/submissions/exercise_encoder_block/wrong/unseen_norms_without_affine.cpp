// Wrong (not in the mistake list): both normalisations are computed by hand
// without the LayerNorms' weight and bias, which are registered and loaded but
// never used: the output does not move when they change.
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
  auto standardise = [](const torch::Tensor& t) {
    auto mean = t.mean(-1, /*keepdim=*/true);
    auto var = t.var(-1, /*unbiased=*/false, /*keepdim=*/true);
    return (t - mean) * torch::rsqrt(var + 1e-5);
  };
  torch::Tensor kpm;
  if (mask.defined()) kpm = mask.logical_not().reshape({x.size(0), x.size(1)});
  auto seq = x.transpose(0, 1);
  auto attended = std::get<0>(self_attn(seq, seq, seq, kpm)).transpose(0, 1);
  auto h = standardise(x + dropout1(attended));
  return standardise(h + dropout2(linear2(dropout(torch::gelu(linear1(h))))));
}
