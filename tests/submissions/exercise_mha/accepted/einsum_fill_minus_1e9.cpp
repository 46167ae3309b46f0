// einsum for both products, no explicit head transposes at all, and -1e9
// instead of -inf for the masked scores (exp underflows to exactly 0 anyway).
#include <cmath>

#include "mha.h"

MultiHeadAttentionImpl::MultiHeadAttentionImpl(int64_t d_model, int64_t num_heads)
    : d_model(d_model), num_heads(num_heads), d_k(num_heads ? d_model / num_heads : 0) {
  TORCH_CHECK(num_heads > 0 && d_model % num_heads == 0, "MultiHeadAttention: ", num_heads,
              " heads cannot split d_model = ", d_model, " evenly");
  q_linear = register_module("q_linear", torch::nn::Linear(d_model, d_model));
  k_linear = register_module("k_linear", torch::nn::Linear(d_model, d_model));
  v_linear = register_module("v_linear", torch::nn::Linear(d_model, d_model));
  out_linear = register_module("out_linear", torch::nn::Linear(d_model, d_model));
}

torch::Tensor MultiHeadAttentionImpl::forward(const torch::Tensor& query, const torch::Tensor& key,
                                              const torch::Tensor& value, const torch::Tensor& mask) {
  const auto B = query.size(0), Nq = query.size(1), Nk = key.size(1);
  // Keep the tokens first: (B, N, H, d_k); einsum picks the axes it needs.
  auto q = q_linear(query).view({B, Nq, num_heads, d_k});
  auto k = k_linear(key).view({B, Nk, num_heads, d_k});
  auto v = v_linear(value).view({B, Nk, num_heads, d_k});

  auto scores = torch::einsum("bqhd,bkhd->bhqk", {q, k}) / std::sqrt(static_cast<double>(d_k));
  if (mask.defined()) scores = scores.masked_fill(mask == 0, -1e9);
  auto attn = torch::softmax(scores, -1);
  // Straight back to (B, Nq, H, d_k), which is token-major again.
  auto out = torch::einsum("bhqk,bkhd->bqhd", {attn, v}).reshape({B, Nq, d_model});
  return out_linear(out);
}
