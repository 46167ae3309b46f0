// key_padding_mask passed as a float 0/1 tensor (1 - mask) instead of a bool one; MultiheadAttention's masked_fill needs bool. (from a red-team pass)
#include "decoder_block.h"

#include <cmath>
#include <limits>
#include <tuple>

DecoderBlockImpl::DecoderBlockImpl(int64_t d_model, int64_t num_heads, int64_t d_ff, double p) {
  using namespace torch::nn;
  self_attn = register_module("self_attn", MultiheadAttention(MultiheadAttentionOptions(d_model, num_heads)));
  multihead_attn = register_module("multihead_attn", MultiheadAttention(MultiheadAttentionOptions(d_model, num_heads)));
  linear1 = register_module("linear1", Linear(d_model, d_ff));
  linear2 = register_module("linear2", Linear(d_ff, d_model));
  norm1 = register_module("norm1", LayerNorm(LayerNormOptions({d_model}).eps(1e-5)));
  norm2 = register_module("norm2", LayerNorm(LayerNormOptions({d_model}).eps(1e-5)));
  norm3 = register_module("norm3", LayerNorm(LayerNormOptions({d_model}).eps(1e-5)));
  dropout = register_module("dropout", Dropout(p));
  dropout1 = register_module("dropout1", Dropout(p));
  dropout2 = register_module("dropout2", Dropout(p));
  dropout3 = register_module("dropout3", Dropout(p));
}

torch::Tensor DecoderBlockImpl::forward(const torch::Tensor& x, const torch::Tensor& memory,
                                        const torch::Tensor& memory_mask) {
  const auto n = x.size(1);
  auto future = torch::full({n, n}, -std::numeric_limits<double>::infinity(), x.options()).triu(1);
  torch::Tensor padding;
  if (memory_mask.defined()) padding = (1 - memory_mask).reshape({memory.size(0), memory.size(1)});  // 1 = pad
  auto tgt = x.transpose(0, 1);
  auto mem = memory.transpose(0, 1);
  auto self = std::get<0>(self_attn->forward(tgt, tgt, tgt, {}, false, future));
  auto h = norm1->forward(tgt + dropout1->forward(self));
  auto cross = std::get<0>(multihead_attn->forward(h, mem, mem, padding, false));
  auto c = norm2->forward(h + dropout2->forward(cross));
  auto ffn = linear2->forward(dropout->forward(torch::gelu(linear1->forward(c))));
  return norm3->forward(c + dropout3->forward(ffn)).transpose(0, 1);
}
