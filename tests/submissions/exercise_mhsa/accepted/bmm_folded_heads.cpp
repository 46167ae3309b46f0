// Accepted: heads folded into the batch axis, (B*H, N, hd), and torch::bmm;
// the softmax and dropout see (B*H, N, N), which is (B, H, N, N) relabelled.
#include "mhsa.h"

#include <cmath>

MultiHeadSelfAttentionImpl::MultiHeadSelfAttentionImpl(int64_t dim, int64_t num_heads, double dropout)
    : dim(dim), num_heads(num_heads), head_dim(num_heads > 0 ? dim / num_heads : 0) {
  TORCH_CHECK(num_heads >= 1, "num_heads must be at least 1, got ", num_heads);
  TORCH_CHECK(dim % num_heads == 0, "embedding dim ", dim, " is not divisible by num_heads ", num_heads);
  q_proj = register_module("q_proj", torch::nn::Linear(dim, dim));
  k_proj = register_module("k_proj", torch::nn::Linear(dim, dim));
  v_proj = register_module("v_proj", torch::nn::Linear(dim, dim));
  out_proj = register_module("out_proj", torch::nn::Linear(dim, dim));
  this->dropout = register_module("dropout", torch::nn::Dropout(dropout));
}

torch::Tensor MultiHeadSelfAttentionImpl::forward(const torch::Tensor& x) {
  const int64_t B = x.size(0), N = x.size(1), H = num_heads, hd = head_dim;
  const auto to_batched_heads = [&](const torch::Tensor& t) {
    // (B, N, D) -> (B, N, H, hd) -> (B, H, N, hd) -> (B*H, N, hd)
    return t.view({B, N, H, hd}).transpose(1, 2).reshape({B * H, N, hd});
  };
  auto q = to_batched_heads(q_proj(x));
  auto k = to_batched_heads(k_proj(x));
  auto v = to_batched_heads(v_proj(x));

  const double inv_sqrt_hd = 1.0 / std::sqrt(static_cast<double>(hd));
  auto scores = torch::bmm(q, k.transpose(1, 2)).mul(inv_sqrt_hd);  // (B*H, N, N)
  auto attn = torch::softmax(scores, /*dim=*/2);
  attn = dropout(attn);

  auto out = torch::bmm(attn, v);                                    // (B*H, N, hd)
  out = out.view({B, H, N, hd}).transpose(1, 2).reshape({B, N, H * hd});
  return out_proj(out);
}
