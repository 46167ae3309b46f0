// Subtracts the largest score read back with .item(): correct numbers, but
// on a GPU every forward waits for the device to hand the value to the host.
#include "mhsa.h"

#include <cmath>

MultiHeadSelfAttentionImpl::MultiHeadSelfAttentionImpl(int64_t dim, int64_t num_heads, double dropout)
    : dim(dim), num_heads(num_heads), head_dim(num_heads > 0 ? dim / num_heads : 0) {
  TORCH_CHECK(num_heads > 0, "MultiHeadSelfAttention: num_heads must be positive, got ", num_heads);
  TORCH_CHECK(dim % num_heads == 0, "MultiHeadSelfAttention: dim (", dim,
              ") must be divisible by num_heads (", num_heads, ")");

  q_proj = register_module("q_proj", torch::nn::Linear(dim, dim));
  k_proj = register_module("k_proj", torch::nn::Linear(dim, dim));
  v_proj = register_module("v_proj", torch::nn::Linear(dim, dim));

  out_proj = register_module("out_proj", torch::nn::Linear(dim, dim));

  this->dropout = register_module("dropout", torch::nn::Dropout(dropout));
}

torch::Tensor MultiHeadSelfAttentionImpl::forward(const torch::Tensor& x) {
  TORCH_CHECK(x.dim() == 3 && x.size(2) == dim, "MultiHeadSelfAttention: expected input of shape (B, N, ", dim,
              "), got ", x.sizes());
  const int64_t B = x.size(0);
  const int64_t N = x.size(1);

  const torch::Tensor q = q_proj(x);
  const torch::Tensor k = k_proj(x);
  const torch::Tensor v = v_proj(x);

  const auto split_heads = [&](const torch::Tensor& t) {
    return t.view({B, N, num_heads, head_dim}).transpose(1, 2);  // (B, H, N, hd)
  };
  const torch::Tensor qh = split_heads(q);
  const torch::Tensor kh = split_heads(k);
  const torch::Tensor vh = split_heads(v);

  const double scale = 1.0 / std::sqrt(static_cast<double>(head_dim));
  torch::Tensor scores = torch::matmul(qh, kh.transpose(-2, -1)) * scale;  // (B, H, N, N)
  const double largest = scores.max().item<double>();
  scores = scores - largest;

  torch::Tensor attn = torch::softmax(scores, /*dim=*/-1);

  attn = dropout(attn);

  const torch::Tensor context = torch::matmul(attn, vh);

  const torch::Tensor merged = context.transpose(1, 2).contiguous().view({B, N, dim});

  return out_proj(merged);
}
