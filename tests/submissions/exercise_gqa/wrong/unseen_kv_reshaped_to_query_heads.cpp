// WRONG (outside the known mistakes): the keys and values are split with
// num_heads where they have num_kv_heads heads: k_proj's KV * head_dim
// features are viewed as (B, N', H, head_dim) with N' = N * KV / H tokens
// (-1 lets the token axis shrink). Right only for num_kv_heads = num_heads;
// otherwise it throws, or silently attends over the wrong number of keys.
#include "gqa.h"

#include <cmath>

GroupedQueryAttentionImpl::GroupedQueryAttentionImpl(int64_t dim, int64_t num_heads, int64_t num_kv_heads)
    : dim(dim), num_heads(num_heads), num_kv_heads(num_kv_heads), head_dim(num_heads > 0 ? dim / num_heads : 0) {
  TORCH_CHECK(num_heads > 0 && dim % num_heads == 0, "dim must be divisible by num_heads");
  TORCH_CHECK(num_kv_heads > 0 && num_heads % num_kv_heads == 0, "num_heads must be divisible by num_kv_heads");
  const auto kv_width = num_kv_heads * head_dim;
  q_proj = register_module("q_proj", torch::nn::Linear(torch::nn::LinearOptions(dim, dim).bias(false)));
  k_proj = register_module("k_proj", torch::nn::Linear(torch::nn::LinearOptions(dim, kv_width).bias(false)));
  v_proj = register_module("v_proj", torch::nn::Linear(torch::nn::LinearOptions(dim, kv_width).bias(false)));
  out_proj = register_module("out_proj", torch::nn::Linear(torch::nn::LinearOptions(dim, dim).bias(false)));
}

torch::Tensor GroupedQueryAttentionImpl::forward(const torch::Tensor& x) {
  const auto B = x.size(0), N = x.size(1);
  auto to_heads = [&](const torch::Tensor& t) { return t.reshape({B, -1, num_heads, head_dim}).transpose(1, 2); };
  auto q = to_heads(q_proj(x)), k = to_heads(k_proj(x)), v = to_heads(v_proj(x));
  auto probs = torch::softmax(torch::matmul(q, k.transpose(-2, -1)) / std::sqrt(double(head_dim)), -1);
  return out_proj(torch::matmul(probs, v).transpose(1, 2).reshape({B, N, dim}));
}
