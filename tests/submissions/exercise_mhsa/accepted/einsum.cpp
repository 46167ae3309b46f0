// Accepted: no explicit transposes at all; einsum reads the heads straight
// from the (B, N, H, hd) view and writes the result back in (B, N, H, hd).
#include "mhsa.h"

#include <cmath>

MultiHeadSelfAttentionImpl::MultiHeadSelfAttentionImpl(int64_t dim, int64_t num_heads, double dropout)
    : dim(dim), num_heads(num_heads), head_dim(num_heads > 0 ? dim / num_heads : 0) {
  TORCH_CHECK(num_heads > 0 && dim % num_heads == 0, "MultiHeadSelfAttention: num_heads (", num_heads,
              ") must divide dim (", dim, ")");
  q_proj = register_module("q_proj", torch::nn::Linear(dim, dim));
  k_proj = register_module("k_proj", torch::nn::Linear(dim, dim));
  v_proj = register_module("v_proj", torch::nn::Linear(dim, dim));
  out_proj = register_module("out_proj", torch::nn::Linear(dim, dim));
  this->dropout = register_module("dropout", torch::nn::Dropout(dropout));
}

torch::Tensor MultiHeadSelfAttentionImpl::forward(const torch::Tensor& x) {
  const int64_t B = x.size(0), N = x.size(1);
  auto q = q_proj(x).reshape({B, N, num_heads, head_dim});  // (B, N, H, hd)
  auto k = k_proj(x).reshape({B, N, num_heads, head_dim});
  auto v = v_proj(x).reshape({B, N, num_heads, head_dim});

  // b: batch, h: head, n: query token, m: key token, d: feature of the head.
  auto scores = torch::einsum("bnhd,bmhd->bhnm", {q, k}) / std::sqrt(static_cast<double>(head_dim));
  auto attn = scores.softmax(-1);  // over m, the keys
  attn = dropout->forward(attn);   // (B, H, N, N)

  auto out = torch::einsum("bhnm,bmhd->bnhd", {attn, v});  // (B, N, H, hd)
  return out_proj(out.reshape({B, N, dim}));
}
