// WRONG twice: the kv heads are tiled (k.repeat), so query head h reads kv head
// h % num_kv_heads, and the scores are divided by sqrt(dim), not sqrt(head_dim).
#include "gqa.h"

#include <cmath>

GroupedQueryAttentionImpl::GroupedQueryAttentionImpl(int64_t dim, int64_t num_heads, int64_t num_kv_heads)
    : dim(dim), num_heads(num_heads), num_kv_heads(num_kv_heads), head_dim(num_heads > 0 ? dim / num_heads : 0) {
  TORCH_CHECK(num_heads > 0 && dim % num_heads == 0, "dim must be divisible by num_heads");
  TORCH_CHECK(num_kv_heads > 0 && num_heads % num_kv_heads == 0, "num_heads must be divisible by num_kv_heads");
  q_proj = register_module("q_proj", torch::nn::Linear(torch::nn::LinearOptions(dim, dim).bias(false)));
  k_proj = register_module("k_proj", torch::nn::Linear(torch::nn::LinearOptions(dim, num_kv_heads * head_dim).bias(false)));
  v_proj = register_module("v_proj", torch::nn::Linear(torch::nn::LinearOptions(dim, num_kv_heads * head_dim).bias(false)));
  out_proj = register_module("out_proj", torch::nn::Linear(torch::nn::LinearOptions(dim, dim).bias(false)));
}

torch::Tensor GroupedQueryAttentionImpl::forward(const torch::Tensor& x) {
  const auto B = x.size(0), N = x.size(1);
  auto q = q_proj(x).view({B, N, num_heads, head_dim}).transpose(1, 2);
  auto k = k_proj(x).view({B, N, num_kv_heads, head_dim}).transpose(1, 2);
  auto v = v_proj(x).view({B, N, num_kv_heads, head_dim}).transpose(1, 2);
  const auto groups = num_heads / num_kv_heads;
  k = k.repeat({1, groups, 1, 1});
  v = v.repeat({1, groups, 1, 1});
  auto attn = torch::softmax(torch::matmul(q, k.transpose(-2, -1)) / std::sqrt(static_cast<double>(dim)), -1);
  auto out = torch::matmul(attn, v).transpose(1, 2).contiguous().view({B, N, dim});
  return out_proj(out);
}
