// loops over the batch, one sequence at a time ((N, 1, D) through the modules), causal mask from where(j > i, -inf, 0) on scalars, padding row by row; results concatenated. (from a red-team pass)
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
  const auto b = x.size(0), n = x.size(1), m = memory.size(1);
  auto idx = torch::arange(n, torch::TensorOptions().dtype(torch::kLong).device(x.device()));
  auto causal = torch::where(idx.view({1, n}) > idx.view({n, 1}), -std::numeric_limits<double>::infinity(), 0.0)
                    .to(x.dtype());
  std::vector<torch::Tensor> outs;
  for (int64_t i = 0; i < b; ++i) {
    auto t = x[i].unsqueeze(1);       // (N, 1, D)
    auto mem = memory[i].unsqueeze(1);  // (M, 1, D)
    torch::Tensor pad;
    if (memory_mask.defined()) pad = memory_mask[i].reshape({1, m}) == 0;
    auto s = std::get<0>(self_attn->forward(t, t, t, {}, false, causal));
    t = norm1->forward(t + dropout1->forward(s));
    auto c = std::get<0>(multihead_attn->forward(t, mem, mem, pad, false));
    t = norm2->forward(t + dropout2->forward(c));
    t = norm3->forward(t + dropout3->forward(linear2->forward(dropout->forward(torch::gelu(linear1->forward(t))))));
    outs.push_back(t.squeeze(1));
  }
  return torch::stack(outs, 0);
}
