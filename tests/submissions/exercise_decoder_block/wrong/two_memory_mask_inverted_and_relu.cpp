// WRONG twice: the 1-for-token memory mask goes to key_padding_mask as it is
// (true means ignore there), and the FFN uses ReLU instead of GELU.
#include "decoder_block.h"

#include <limits>

namespace {

torch::nn::MultiheadAttention attention(int64_t d_model, int64_t num_heads) {
  return torch::nn::MultiheadAttention(torch::nn::MultiheadAttentionOptions(d_model, num_heads));
}

torch::nn::LayerNorm layer_norm(int64_t d_model) {
  return torch::nn::LayerNorm(torch::nn::LayerNormOptions({d_model}).eps(1e-5));
}

}  // namespace

DecoderBlockImpl::DecoderBlockImpl(int64_t d_model, int64_t num_heads, int64_t d_ff, double dropout) {
  self_attn = register_module("self_attn", attention(d_model, num_heads));
  multihead_attn = register_module("multihead_attn", attention(d_model, num_heads));
  linear1 = register_module("linear1", torch::nn::Linear(d_model, d_ff));
  linear2 = register_module("linear2", torch::nn::Linear(d_ff, d_model));
  norm1 = register_module("norm1", layer_norm(d_model));
  norm2 = register_module("norm2", layer_norm(d_model));
  norm3 = register_module("norm3", layer_norm(d_model));
  this->dropout = register_module("dropout", torch::nn::Dropout(dropout));
  dropout1 = register_module("dropout1", torch::nn::Dropout(dropout));
  dropout2 = register_module("dropout2", torch::nn::Dropout(dropout));
  dropout3 = register_module("dropout3", torch::nn::Dropout(dropout));
}

torch::Tensor DecoderBlockImpl::forward(const torch::Tensor& x, const torch::Tensor& memory,
                                        const torch::Tensor& memory_mask) {
  const auto n = x.size(1);
  // Focus point `causal_mask`: -inf above the diagonal, where query i would see
  // a later key j > i, and 0 elsewhere. LibTorch's C++ MultiheadAttention ADDS
  // attn_mask to the scores (a bool mask would add 1, masking nothing), so the
  // mask is a float one, in x's dtype and on x's device.
  auto future = torch::full({n, n}, -std::numeric_limits<double>::infinity(), x.options()).triu(1);
  // Focus point `cross_attention`: our memory mask is (B, 1, 1, M), 1 for a real
  // position; key_padding_mask is (B, M), true where a key is padding.
  torch::Tensor padding;
  if (memory_mask.defined()) padding = (memory_mask != 0).reshape({memory.size(0), memory.size(1)});

  // MultiheadAttention works in (length, B, d_model).
  auto tgt = x.transpose(0, 1);
  auto mem = memory.transpose(0, 1);
  auto self = std::get<0>(self_attn->forward(tgt, tgt, tgt, /*key_padding_mask=*/{}, /*need_weights=*/false, future));
  auto h = norm1->forward(tgt + dropout1->forward(self));
  // Queries from the decoder, keys and values from the memory; no causal mask here.
  auto cross = std::get<0>(multihead_attn->forward(h, mem, mem, padding, /*need_weights=*/false));
  auto c = norm2->forward(h + dropout2->forward(cross));
  auto ffn = linear2->forward(dropout->forward(torch::relu(linear1->forward(c))));
  return norm3->forward(c + dropout3->forward(ffn)).transpose(0, 1);
}
