// WRONG twice: the scores are never divided by sqrt(head_dim), and dropout
// acts on the layer's output instead of on the attention weights. The two are
// independent: an interviewer names both.
#include "mhsa.h"

MultiHeadSelfAttentionImpl::MultiHeadSelfAttentionImpl(int64_t dim, int64_t num_heads, double dropout)
    : dim(dim), num_heads(num_heads), head_dim(num_heads > 0 ? dim / num_heads : 0) {
  TORCH_CHECK(num_heads > 0 && dim % num_heads == 0, "num_heads must divide dim");
  q_proj = register_module("q_proj", torch::nn::Linear(dim, dim));
  k_proj = register_module("k_proj", torch::nn::Linear(dim, dim));
  v_proj = register_module("v_proj", torch::nn::Linear(dim, dim));
  out_proj = register_module("out_proj", torch::nn::Linear(dim, dim));
  this->dropout = register_module("dropout", torch::nn::Dropout(dropout));
}

torch::Tensor MultiHeadSelfAttentionImpl::forward(const torch::Tensor& x) {
  const int64_t B = x.size(0), N = x.size(1);
  auto heads = [&](const torch::Tensor& t) { return t.view({B, N, num_heads, head_dim}).transpose(1, 2); };
  auto q = heads(q_proj(x)), k = heads(k_proj(x)), v = heads(v_proj(x));
  auto weights = torch::softmax(torch::matmul(q, k.transpose(-2, -1)), -1);
  auto merged = torch::matmul(weights, v).transpose(1, 2).reshape({B, N, dim});
  return dropout(out_proj(merged));
}
