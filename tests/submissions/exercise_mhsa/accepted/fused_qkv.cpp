// Accepted: one matmul for Q, K and V together, by stacking the three registered
// weight matrices at run time, then chunk; unflatten/flatten for the heads and
// the functional dropout with the module's options.
#include "mhsa.h"

#include <torch/nn/functional/dropout.h>

#include <cmath>

MultiHeadSelfAttentionImpl::MultiHeadSelfAttentionImpl(int64_t dim, int64_t num_heads, double dropout)
    : dim(dim), num_heads(num_heads), head_dim(num_heads > 0 ? dim / num_heads : 0) {
  TORCH_CHECK(num_heads > 0 && dim % num_heads == 0, "dim must be a multiple of num_heads (dim=", dim,
              ", num_heads=", num_heads, ")");
  q_proj = register_module("q_proj", torch::nn::Linear(dim, dim));
  k_proj = register_module("k_proj", torch::nn::Linear(dim, dim));
  v_proj = register_module("v_proj", torch::nn::Linear(dim, dim));
  out_proj = register_module("out_proj", torch::nn::Linear(dim, dim));
  this->dropout = register_module("dropout", torch::nn::Dropout(dropout));
}

torch::Tensor MultiHeadSelfAttentionImpl::forward(const torch::Tensor& x) {
  namespace F = torch::nn::functional;

  // (3D, D) weight and (3D) bias: rows 0..D-1 are q_proj's, then k_proj's, then v_proj's.
  const auto w = torch::cat({q_proj->weight, k_proj->weight, v_proj->weight}, /*dim=*/0);
  const auto b = torch::cat({q_proj->bias, k_proj->bias, v_proj->bias}, /*dim=*/0);
  const auto qkv = torch::linear(x, w, b).chunk(3, /*dim=*/-1);  // 3 x (B, N, D)

  const auto heads = [&](const torch::Tensor& t) {
    return t.unflatten(-1, {num_heads, head_dim}).transpose(1, 2);  // (B, H, N, hd)
  };
  auto q = heads(qkv[0]);
  auto k = heads(qkv[1]);
  auto v = heads(qkv[2]);

  auto attn = torch::softmax(q.matmul(k.transpose(-1, -2)) / std::sqrt(static_cast<double>(head_dim)), -1);
  attn = F::dropout(attn, F::DropoutFuncOptions().p(dropout->options.p()).training(is_training()));

  auto out = attn.matmul(v).transpose(1, 2).flatten(/*start_dim=*/2);  // (B, N, D)
  return out_proj(out);
}
