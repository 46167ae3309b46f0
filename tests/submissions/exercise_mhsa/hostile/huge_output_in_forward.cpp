// Hostile: a correct module whose forward() writes an endless stream of text to
// stderr before computing. The output cap stops it: verdict output_limit.
#include "mhsa.h"

#include <cmath>
#include <cstdio>

MultiHeadSelfAttentionImpl::MultiHeadSelfAttentionImpl(int64_t dim, int64_t num_heads, double dropout)
    : dim(dim), num_heads(num_heads), head_dim(num_heads > 0 ? dim / num_heads : 0) {
  TORCH_CHECK(num_heads > 0 && dim % num_heads == 0, "dim must be divisible by num_heads");
  q_proj = register_module("q_proj", torch::nn::Linear(dim, dim));
  k_proj = register_module("k_proj", torch::nn::Linear(dim, dim));
  v_proj = register_module("v_proj", torch::nn::Linear(dim, dim));
  out_proj = register_module("out_proj", torch::nn::Linear(dim, dim));
  this->dropout = register_module("dropout", torch::nn::Dropout(dropout));
}

torch::Tensor MultiHeadSelfAttentionImpl::forward(const torch::Tensor& x) {
  for (unsigned long line = 0;; ++line) {
    std::fprintf(stderr, "%lu debugging the attention heads, please keep scrolling\n", line);
  }

  const int64_t B = x.size(0), N = x.size(1);
  auto split = [&](const torch::Tensor& t) { return t.view({B, N, num_heads, head_dim}).transpose(1, 2); };
  auto scores = torch::matmul(split(q_proj(x)), split(k_proj(x)).transpose(-2, -1)) /
                std::sqrt(static_cast<double>(head_dim));
  auto attn = dropout(torch::softmax(scores, -1));
  auto context = torch::matmul(attn, split(v_proj(x)));
  return out_proj(context.transpose(1, 2).reshape({B, N, dim}));
}
