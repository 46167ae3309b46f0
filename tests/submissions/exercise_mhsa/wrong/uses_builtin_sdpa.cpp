// WRONG: the attention itself is delegated to ATen's built-in at::_scaled_dot_product_attention.
#include "mhsa.h"

#include <ATen/ops/_scaled_dot_product_attention.h>

#include <tuple>

MultiHeadSelfAttentionImpl::MultiHeadSelfAttentionImpl(int64_t dim, int64_t num_heads, double dropout)
    : dim(dim), num_heads(num_heads), head_dim(num_heads > 0 ? dim / num_heads : 0) {
  TORCH_CHECK(num_heads > 0 && dim % num_heads == 0, "dim (", dim, ") must be divisible by num_heads (", num_heads,
              ")");
  q_proj = register_module("q_proj", torch::nn::Linear(dim, dim));
  k_proj = register_module("k_proj", torch::nn::Linear(dim, dim));
  v_proj = register_module("v_proj", torch::nn::Linear(dim, dim));
  out_proj = register_module("out_proj", torch::nn::Linear(dim, dim));
  this->dropout = register_module("dropout", torch::nn::Dropout(dropout));
}

torch::Tensor MultiHeadSelfAttentionImpl::forward(const torch::Tensor& x) {
  const int64_t B = x.size(0), N = x.size(1);

  auto q = q_proj(x).view({B, N, num_heads, head_dim}).transpose(1, 2);  // (B, H, N, hd)
  auto k = k_proj(x).view({B, N, num_heads, head_dim}).transpose(1, 2);
  auto v = v_proj(x).view({B, N, num_heads, head_dim}).transpose(1, 2);

  const double p = is_training() ? dropout->options.p() : 0.0;
  auto out = std::get<0>(at::_scaled_dot_product_attention(q, k, v, /*attn_mask=*/{}, /*dropout_p=*/p));

  out = out.transpose(1, 2).contiguous().view({B, N, dim});  // (B, N, D)
  return out_proj(out);
}
