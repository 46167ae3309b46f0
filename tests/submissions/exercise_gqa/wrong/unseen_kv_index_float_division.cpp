// WRONG (outside the known mistakes): the kv head of each query head is looked
// up with an index built by true division, (arange(H) * KV) / H, which on an
// integer tensor gives floats; indexing with a float tensor throws on every
// configuration, MQA and MHA included.
#include "gqa.h"

#include <cmath>

using torch::indexing::Slice;

GroupedQueryAttentionImpl::GroupedQueryAttentionImpl(int64_t dim, int64_t num_heads, int64_t num_kv_heads)
    : dim(dim), num_heads(num_heads), num_kv_heads(num_kv_heads), head_dim(num_heads > 0 ? dim / num_heads : 0) {
  TORCH_CHECK(num_heads > 0 && dim % num_heads == 0, "dim must be a multiple of num_heads");
  TORCH_CHECK(num_kv_heads > 0 && num_heads % num_kv_heads == 0, "num_heads must be a multiple of num_kv_heads");
  q_proj = register_module("q_proj", torch::nn::Linear(torch::nn::LinearOptions(dim, dim).bias(false)));
  k_proj = register_module("k_proj", torch::nn::Linear(torch::nn::LinearOptions(dim, num_kv_heads * head_dim).bias(false)));
  v_proj = register_module("v_proj", torch::nn::Linear(torch::nn::LinearOptions(dim, num_kv_heads * head_dim).bias(false)));
  out_proj = register_module("out_proj", torch::nn::Linear(torch::nn::LinearOptions(dim, dim).bias(false)));
}

torch::Tensor GroupedQueryAttentionImpl::forward(const torch::Tensor& x) {
  const int64_t B = x.size(0), N = x.size(1);
  auto split = [&](const torch::Tensor& t, int64_t count) { return t.view({B, N, count, head_dim}).transpose(1, 2); };
  auto q = split(q_proj(x), num_heads);
  auto k = split(k_proj(x), num_kv_heads);
  auto v = split(v_proj(x), num_kv_heads);
  // query head h -> kv head h * KV / H
  auto owner = torch::arange(num_heads, torch::TensorOptions().dtype(torch::kLong).device(x.device())) * num_kv_heads /
               num_heads;
  k = k.index({Slice(), owner});
  v = v.index({Slice(), owner});
  auto scores = torch::matmul(q, k.transpose(-2, -1)) / std::sqrt(static_cast<double>(head_dim));
  auto out = torch::matmul(torch::softmax(scores, -1), v);
  return out_proj(out.transpose(1, 2).reshape({B, N, dim}));
}
