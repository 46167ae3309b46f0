// WRONG (outside the known mistakes): the kv heads are stretched to the query
// heads with expand_as(q) straight from (B, num_kv_heads, N, head_dim). expand
// only repeats an axis of size 1, so it works for MQA (one kv head) and for
// num_kv_heads = num_heads (nothing to stretch) and throws for every real
// grouping.
#include "gqa.h"

#include <cmath>

GroupedQueryAttentionImpl::GroupedQueryAttentionImpl(int64_t dim, int64_t num_heads, int64_t num_kv_heads)
    : dim(dim), num_heads(num_heads), num_kv_heads(num_kv_heads), head_dim(num_heads > 0 ? dim / num_heads : 0) {
  TORCH_CHECK(num_heads > 0 && dim % num_heads == 0, "GQA: dim ", dim, " is not a multiple of num_heads ", num_heads);
  TORCH_CHECK(num_kv_heads > 0 && num_heads % num_kv_heads == 0, "GQA: num_heads ", num_heads,
              " is not a multiple of num_kv_heads ", num_kv_heads);
  auto linear = [](int64_t in, int64_t out) { return torch::nn::Linear(torch::nn::LinearOptions(in, out).bias(false)); };
  q_proj = register_module("q_proj", linear(dim, dim));
  k_proj = register_module("k_proj", linear(dim, num_kv_heads * head_dim));
  v_proj = register_module("v_proj", linear(dim, num_kv_heads * head_dim));
  out_proj = register_module("out_proj", linear(dim, dim));
}

torch::Tensor GroupedQueryAttentionImpl::forward(const torch::Tensor& x) {
  const auto batch = x.size(0), tokens = x.size(1);
  auto heads = [&](const torch::Tensor& t, int64_t count) {
    return t.reshape({batch, tokens, count, head_dim}).permute({0, 2, 1, 3});
  };
  auto q = heads(q_proj(x), num_heads);
  auto k = heads(k_proj(x), num_kv_heads).expand_as(q);
  auto v = heads(v_proj(x), num_kv_heads).expand_as(q);
  auto weights = (q.matmul(k.transpose(2, 3)) * (1.0 / std::sqrt(static_cast<double>(head_dim)))).softmax(-1);
  auto merged = weights.matmul(v).permute({0, 2, 1, 3}).reshape({batch, tokens, dim});
  return out_proj(merged);
}
