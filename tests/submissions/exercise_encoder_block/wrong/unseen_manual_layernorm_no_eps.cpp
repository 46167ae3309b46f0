// Wrong (not in the mistake list): LayerNorm written by hand with the biased
// variance, the modules' weight and bias, and no epsilon at all: on ordinary
// inputs it differs from LayerNorm by only ~1e-5.
#include "encoder_block.h"

namespace {
torch::Tensor normalise(const torch::Tensor& t, const torch::nn::LayerNorm& norm) {
  auto centred = t - t.mean(-1, /*keepdim=*/true);
  auto spread = centred.pow(2).mean(-1, /*keepdim=*/true).sqrt();
  return centred / spread * norm->weight + norm->bias;
}
}  // namespace

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
  if (mask.defined()) padded = (mask == 0).view({x.size(0), x.size(1)});
  auto s = x.transpose(0, 1);
  auto a = std::get<0>(self_attn(s, s, s, padded)).transpose(0, 1);
  auto h = normalise(x + dropout1(a), norm1);
  return normalise(h + dropout2(linear2(dropout(torch::gelu(linear1(h))))), norm2);
}
