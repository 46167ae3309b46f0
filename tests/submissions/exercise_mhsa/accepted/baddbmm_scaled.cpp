// Accepted: the scale folded into the score matmul with baddbmm's alpha, the
// weights kept as a (B, H, N, N) view for the softmax and the dropout, and a
// numerically stable softmax written out by hand.
#include "mhsa.h"

#include <cmath>

MultiHeadSelfAttentionImpl::MultiHeadSelfAttentionImpl(int64_t dim, int64_t num_heads, double dropout)
    : dim(dim), num_heads(num_heads), head_dim(num_heads > 0 ? dim / num_heads : 0) {
  if (num_heads <= 0 || dim % num_heads != 0) {
    TORCH_CHECK(false, "MultiHeadSelfAttention: dim=", dim, " cannot be split evenly into num_heads=", num_heads);
  }
  q_proj = register_module("q_proj", torch::nn::Linear(dim, dim));
  k_proj = register_module("k_proj", torch::nn::Linear(dim, dim));
  v_proj = register_module("v_proj", torch::nn::Linear(dim, dim));
  out_proj = register_module("out_proj", torch::nn::Linear(dim, dim));
  this->dropout = register_module("dropout", torch::nn::Dropout(dropout));
}

torch::Tensor MultiHeadSelfAttentionImpl::forward(const torch::Tensor& x) {
  const int64_t B = x.size(0), N = x.size(1), H = num_heads, hd = head_dim;
  auto q = q_proj(x).view({B, N, H, hd}).permute({0, 2, 1, 3}).reshape({B * H, N, hd});
  auto k = k_proj(x).view({B, N, H, hd}).permute({0, 2, 3, 1}).reshape({B * H, hd, N});  // already K^T
  auto v = v_proj(x).view({B, N, H, hd}).permute({0, 2, 1, 3});                          // (B, H, N, hd)

  // scores = zeros + alpha * (q @ k^T) = (q @ k^T) / sqrt(hd). beta stays 1: with
  // beta = 0, LibTorch 1.13's CPU baddbmm sometimes returned NaN here (seen in this
  // corpus), so the zeros are added rather than ignored.
  auto scores = torch::baddbmm(torch::zeros({B * H, N, N}, q.options()), q, k, /*beta=*/1.0,
                               /*alpha=*/1.0 / std::sqrt(static_cast<double>(hd)))
                    .view({B, H, N, N});

  auto shifted = scores - std::get<0>(scores.max(/*dim=*/-1, /*keepdim=*/true));
  auto e = shifted.exp();
  auto attn = e / e.sum(/*dim=*/-1, /*keepdim=*/true);
  attn = dropout(attn);

  auto out = torch::matmul(attn, v).permute({0, 2, 1, 3}).reshape({B, N, H * hd});
  return out_proj(out);
}
