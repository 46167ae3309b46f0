// self-attention written by hand from self_attn's own parameters, one head at a time (masked_fill of the scores above the diagonal); cross-attention through the module. (from a red-team pass)
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

namespace {
torch::Tensor causal_self_attention(torch::nn::MultiheadAttention& mha, const torch::Tensor& x) {
  // x: (B, N, D)
  const auto bsz = x.size(0), n = x.size(1), d = x.size(2);
  const auto h = mha->options.num_heads(), hd = d / h;
  auto qkv = torch::nn::functional::linear(x, mha->in_proj_weight, mha->in_proj_bias);
  auto parts = qkv.chunk(3, -1);
  auto future = torch::ones({n, n}, x.options().dtype(torch::kBool)).triu(1);
  std::vector<torch::Tensor> heads;
  for (int64_t i = 0; i < h; ++i) {
    auto q = parts[0].narrow(-1, i * hd, hd), k = parts[1].narrow(-1, i * hd, hd), v = parts[2].narrow(-1, i * hd, hd);
    auto scores = torch::matmul(q, k.transpose(-2, -1)) / std::sqrt(static_cast<double>(hd));
    scores = scores.masked_fill(future, -std::numeric_limits<double>::infinity());
    heads.push_back(torch::matmul(torch::softmax(scores, -1), v));
  }
  auto concat = torch::cat(heads, -1);
  (void)bsz;
  return mha->out_proj->forward(concat);
}
}  // namespace

torch::Tensor DecoderBlockImpl::forward(const torch::Tensor& x, const torch::Tensor& memory,
                                        const torch::Tensor& memory_mask) {
  auto h = norm1->forward(x + dropout1->forward(causal_self_attention(self_attn, x)));
  torch::Tensor pad;
  if (memory_mask.defined()) pad = (memory_mask == 0).reshape({memory.size(0), memory.size(1)});
  auto q = h.transpose(0, 1), mem = memory.transpose(0, 1);
  auto cross = std::get<0>(multihead_attn->forward(q, mem, mem, pad, false)).transpose(0, 1);
  auto c = norm2->forward(h + dropout2->forward(cross));
  return norm3->forward(c + dropout3->forward(linear2->forward(dropout->forward(torch::gelu(linear1->forward(c))))));
}
