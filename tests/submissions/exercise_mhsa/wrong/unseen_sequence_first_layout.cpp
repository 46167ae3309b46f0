// WRONG: the input is read as (N, B, D), sequence first (torch.nn.MultiheadAttention's
// default layout), so attention mixes the batch entries instead of the tokens.
#include "mhsa.h"

#include <cmath>

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
  const int64_t N = x.size(0), B = x.size(1);

  // (N, B, D) -> (N, B * H, hd) -> (B * H, N, hd)
  auto q = q_proj(x).reshape({N, B * num_heads, head_dim}).transpose(0, 1);
  auto k = k_proj(x).reshape({N, B * num_heads, head_dim}).transpose(0, 1);
  auto v = v_proj(x).reshape({N, B * num_heads, head_dim}).transpose(0, 1);

  auto scores = torch::bmm(q, k.transpose(1, 2)) / std::sqrt(static_cast<double>(head_dim));  // (B * H, N, N)
  auto attn = torch::softmax(scores, /*dim=*/-1);
  attn = dropout(attn);

  auto out = torch::bmm(attn, v);                               // (B * H, N, hd)
  out = out.transpose(0, 1).contiguous().view({N, B, dim});     // (N, B, D)
  return out_proj(out);
}
