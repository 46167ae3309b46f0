// causal mask as log(tril(ones)) (log 1 = 0, log 0 = -inf), padding by flatten + lt(0.5), outputs unpacked with std::tie and need_weights left on. (from a red-team pass)
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
  auto causal = torch::ones({n, n}, x.options()).tril().log();
  torch::Tensor pad;
  if (memory_mask.defined()) pad = memory_mask.flatten(1).lt(0.5);
  auto q = x.transpose(0, 1).contiguous();
  auto kv = memory.transpose(0, 1).contiguous();
  torch::Tensor a, w;
  std::tie(a, w) = self_attn->forward(q, q, q, {}, true, causal);
  q = norm1(q + dropout1(a));
  std::tie(a, w) = multihead_attn->forward(q, kv, kv, pad);
  q = norm2(q + dropout2(a));
  auto f = linear2(dropout(torch::gelu(linear1(q))));
  q = norm3(q + dropout3(f));
  return q.transpose(0, 1);
}
