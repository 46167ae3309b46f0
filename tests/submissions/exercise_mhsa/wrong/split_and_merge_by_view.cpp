// WRONG: one fused projection split into q, k, v, each viewed straight to
// (B, H, N, hd) and the result viewed straight back: consistent shapes, but
// a head's rows are slices of whole tokens, not hd features of each token.
#include "mhsa.h"

#include <cmath>

MultiHeadSelfAttentionImpl::MultiHeadSelfAttentionImpl(int64_t dim, int64_t num_heads, double dropout)
    : dim(dim), num_heads(num_heads), head_dim(num_heads > 0 ? dim / num_heads : 0) {
  TORCH_CHECK(num_heads > 0 && dim % num_heads == 0, "dim must be a multiple of num_heads");
  q_proj = register_module("q_proj", torch::nn::Linear(dim, dim));
  k_proj = register_module("k_proj", torch::nn::Linear(dim, dim));
  v_proj = register_module("v_proj", torch::nn::Linear(dim, dim));
  out_proj = register_module("out_proj", torch::nn::Linear(dim, dim));
  this->dropout = register_module("dropout", torch::nn::Dropout(dropout));
}

torch::Tensor MultiHeadSelfAttentionImpl::forward(const torch::Tensor& x) {
  const auto sizes = x.sizes();
  const int64_t batch = sizes[0], tokens = sizes[1];
  auto split = [&](torch::nn::Linear& proj) { return proj(x).view({batch, num_heads, tokens, head_dim}); };
  auto q = split(q_proj), k = split(k_proj), v = split(v_proj);
  auto attn = torch::softmax(torch::matmul(q, k.transpose(-1, -2)) / std::sqrt(double(head_dim)), -1);
  auto mixed = torch::matmul(dropout(attn), v);
  return out_proj(mixed.view({batch, tokens, dim}));
}
