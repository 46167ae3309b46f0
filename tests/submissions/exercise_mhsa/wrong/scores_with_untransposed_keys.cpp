// WRONG: the scores multiply the queries by the keys as they are, not by
// their transpose: (B, H, N, hd) @ (B, H, N, hd) fails with a shape error
// in forward (unless N == hd). The report must say which line raised it.
#include "mhsa.h"

#include <cmath>

MultiHeadSelfAttentionImpl::MultiHeadSelfAttentionImpl(int64_t dim, int64_t num_heads, double dropout)
    : dim(dim), num_heads(num_heads), head_dim(num_heads > 0 ? dim / num_heads : 0) {
  TORCH_CHECK(num_heads > 0 && dim % num_heads == 0, "dim (", dim, ") must be divisible by num_heads (", num_heads,
              ")");
  q_proj = register_module("q_proj", torch::nn::Linear(dim, dim));
  k_proj = register_module("k_proj", torch::nn::Linear(dim, dim));
  v_proj = register_module("v_proj", torch::nn::Linear(dim, dim));
  out_proj = register_module("out_proj", torch::nn::Linear(dim, dim));
  this->dropout = register_module("dropout", torch::nn::Dropout(dropout));
}

torch::Tensor MultiHeadSelfAttentionImpl::forward(const torch::Tensor& x) {
  const int64_t B = x.size(0), N = x.size(1);
  auto split = [&](const torch::Tensor& t) { return t.view({B, N, num_heads, head_dim}).transpose(1, 2); };
  auto q = split(q_proj(x)), k = split(k_proj(x)), v = split(v_proj(x));
  auto scores = torch::matmul(q, k) / std::sqrt(static_cast<double>(head_dim));
  auto weights = dropout(torch::softmax(scores, -1));
  auto merged = torch::matmul(weights, v).transpose(1, 2).contiguous().view({B, N, dim});
  return out_proj(merged);
}
