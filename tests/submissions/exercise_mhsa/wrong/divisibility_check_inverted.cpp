// WRONG: the divisibility check is inverted: every valid size is refused and
// the one the statement says must be refused (dim = 10, num_heads = 3) is accepted.
#include "mhsa.h"

#include <cmath>

MultiHeadSelfAttentionImpl::MultiHeadSelfAttentionImpl(int64_t dim, int64_t num_heads, double dropout)
    : dim(dim), num_heads(num_heads), head_dim(num_heads > 0 ? dim / num_heads : 0) {
  TORCH_CHECK(num_heads > 0 && dim % num_heads != 0, "MultiHeadSelfAttention: dim (", dim,
              ") must be divisible by num_heads (", num_heads, ")");
  q_proj = register_module("q_proj", torch::nn::Linear(dim, dim));
  k_proj = register_module("k_proj", torch::nn::Linear(dim, dim));
  v_proj = register_module("v_proj", torch::nn::Linear(dim, dim));
  out_proj = register_module("out_proj", torch::nn::Linear(dim, dim));
  this->dropout = register_module("dropout", torch::nn::Dropout(dropout));
}

torch::Tensor MultiHeadSelfAttentionImpl::forward(const torch::Tensor& x) {
  const int64_t B = x.size(0), N = x.size(1);

  auto q = q_proj(x);
  auto k = k_proj(x);
  auto v = v_proj(x);

  // (B, N, D) -> (B, N, H, hd) -> (B, H, N, hd)
  q = q.view({B, N, num_heads, head_dim}).transpose(1, 2);
  k = k.view({B, N, num_heads, head_dim}).transpose(1, 2);
  v = v.view({B, N, num_heads, head_dim}).transpose(1, 2);

  auto scores = torch::matmul(q, k.transpose(-2, -1));  // (B, H, N, N)
  scores = scores / std::sqrt(static_cast<double>(head_dim));
  auto attn = torch::softmax(scores, /*dim=*/-1);
  attn = dropout(attn);

  auto out = torch::matmul(attn, v);                         // (B, H, N, hd)
  out = out.transpose(1, 2).contiguous().view({B, N, dim});  // (B, N, D)
  return out_proj(out);
}
