// Wrong (not in the mistake list as written): a helper runs the feed-forward
// sub-layer, and it is called on the block's input x instead of h.
#include "encoder_block.h"

namespace {
torch::Tensor position_wise(torch::nn::Linear up, torch::nn::Linear down, torch::nn::Dropout drop,
                            const torch::Tensor& t) {
  return down->forward(drop->forward(torch::gelu(up->forward(t))));
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
  torch::Tensor skip_keys;
  if (mask.defined()) skip_keys = mask.flatten(1).logical_not();
  auto nbd = x.permute({1, 0, 2});
  auto attn_out = std::get<0>(self_attn(nbd, nbd, nbd, skip_keys)).permute({1, 0, 2});
  auto h = norm1(x + dropout1(attn_out));
  return norm2(h + dropout2(position_wise(linear1, linear2, dropout, x)));
}
