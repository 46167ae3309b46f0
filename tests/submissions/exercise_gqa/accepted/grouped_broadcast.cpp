// Accepted: no copy of the kv heads at all. The queries are grouped as
// (B, KV, G, N, hd) and the keys and values given a singleton group axis,
// so broadcasting in matmul shares each kv head with its group.
#include "gqa.h"

#include <cmath>

GroupedQueryAttentionImpl::GroupedQueryAttentionImpl(int64_t dim, int64_t num_heads, int64_t num_kv_heads)
    : dim(dim), num_heads(num_heads), num_kv_heads(num_kv_heads), head_dim(num_heads > 0 ? dim / num_heads : 0) {
  TORCH_CHECK(num_heads > 0 && dim % num_heads == 0, "dim must be a multiple of num_heads");
  TORCH_CHECK(num_kv_heads > 0 && num_heads % num_kv_heads == 0, "num_heads must be a multiple of num_kv_heads");
  const auto kv_dim = num_kv_heads * head_dim;
  q_proj = register_module("q_proj", torch::nn::Linear(torch::nn::LinearOptions(dim, dim).bias(false)));
  k_proj = register_module("k_proj", torch::nn::Linear(torch::nn::LinearOptions(dim, kv_dim).bias(false)));
  v_proj = register_module("v_proj", torch::nn::Linear(torch::nn::LinearOptions(dim, kv_dim).bias(false)));
  out_proj = register_module("out_proj", torch::nn::Linear(torch::nn::LinearOptions(dim, dim).bias(false)));
}

torch::Tensor GroupedQueryAttentionImpl::forward(const torch::Tensor& x) {
  const int64_t B = x.size(0), N = x.size(1), KV = num_kv_heads, G = num_heads / num_kv_heads;
  // Query head h = g_kv * G + j: (B, N, KV, G, hd) -> (B, KV, G, N, hd).
  auto q = q_proj(x).view({B, N, KV, G, head_dim}).permute({0, 2, 3, 1, 4});
  auto k = k_proj(x).view({B, N, KV, 1, head_dim}).permute({0, 2, 3, 1, 4});  // (B, KV, 1, N, hd)
  auto v = v_proj(x).view({B, N, KV, 1, head_dim}).permute({0, 2, 3, 1, 4});
  auto scores = torch::matmul(q, k.transpose(-1, -2)) / std::sqrt(static_cast<double>(head_dim));
  auto ctx = torch::matmul(torch::softmax(scores, -1), v);  // (B, KV, G, N, hd)
  return out_proj(ctx.permute({0, 3, 1, 2, 4}).reshape({B, N, dim}));
}
