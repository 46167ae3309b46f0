// Forbidden: the projections and the kv expansion are written by hand, but
// the attention itself is handed to LibTorch's fused scaled dot-product
// attention (the private 1.13 op; in 2.x the public one).
#include "gqa.h"

#include <torch/version.h>

#if TORCH_VERSION_MAJOR >= 2
#include <ATen/ops/scaled_dot_product_attention.h>
#else
#include <ATen/ops/_scaled_dot_product_attention.h>
#endif

GroupedQueryAttentionImpl::GroupedQueryAttentionImpl(int64_t dim, int64_t num_heads, int64_t num_kv_heads)
    : dim(dim), num_heads(num_heads), num_kv_heads(num_kv_heads), head_dim(dim / num_heads) {
  TORCH_CHECK(dim % num_heads == 0 && num_heads % num_kv_heads == 0, "bad head counts");
  auto options = [](int64_t in, int64_t out) { return torch::nn::LinearOptions(in, out).bias(false); };
  q_proj = register_module("q_proj", torch::nn::Linear(options(dim, dim)));
  k_proj = register_module("k_proj", torch::nn::Linear(options(dim, num_kv_heads * head_dim)));
  v_proj = register_module("v_proj", torch::nn::Linear(options(dim, num_kv_heads * head_dim)));
  out_proj = register_module("out_proj", torch::nn::Linear(options(dim, dim)));
}

torch::Tensor GroupedQueryAttentionImpl::forward(const torch::Tensor& x) {
  const auto B = x.size(0), N = x.size(1), G = num_heads / num_kv_heads;
  auto q = q_proj(x).view({B, N, num_heads, head_dim}).transpose(1, 2);
  auto k = k_proj(x).view({B, N, num_kv_heads, head_dim}).transpose(1, 2).repeat_interleave(G, 1);
  auto v = v_proj(x).view({B, N, num_kv_heads, head_dim}).transpose(1, 2).repeat_interleave(G, 1);
#if TORCH_VERSION_MAJOR >= 2
  auto heads = at::scaled_dot_product_attention(q, k, v);
#else
  auto heads = std::get<0>(at::_scaled_dot_product_attention(q, k, v, c10::nullopt, 0.0, false, false));
#endif
  return out_proj(heads.transpose(1, 2).reshape({B, N, dim}));
}
