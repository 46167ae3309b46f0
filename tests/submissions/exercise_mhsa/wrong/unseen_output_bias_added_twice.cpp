// Wrong, a mistake nobody listed: the output projection's bias is added again
// by hand after out_proj (which already adds it), as if Linear had none.
#include "mhsa.h"

#include <cmath>

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
  const auto B = x.size(0), N = x.size(1);
  auto heads = [&](const torch::Tensor& t) { return t.reshape({B, N, num_heads, head_dim}).permute({0, 2, 1, 3}); };
  auto q = heads(q_proj(x)), k = heads(k_proj(x)), v = heads(v_proj(x));
  auto weights = dropout(torch::softmax(q.matmul(k.transpose(2, 3)) / std::sqrt(double(head_dim)), -1));
  auto merged = weights.matmul(v).permute({0, 2, 1, 3}).reshape({B, N, dim});
  return out_proj(merged) + out_proj->bias;
}
