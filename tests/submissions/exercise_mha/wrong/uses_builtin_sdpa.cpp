// WRONG: the attention itself is delegated to ATen's built-in at::_scaled_dot_product_attention
// (projections and head split by hand, the part an interviewer asks for done by the library).
#include "mha.h"

#include <ATen/ops/_scaled_dot_product_attention.h>

#include <cmath>
#include <limits>

MultiHeadAttentionImpl::MultiHeadAttentionImpl(int64_t d_model, int64_t num_heads)
    : d_model(d_model), num_heads(num_heads), d_k(num_heads > 0 ? d_model / num_heads : 0) {
  TORCH_CHECK(num_heads > 0, "MultiHeadAttention: num_heads must be positive, got ", num_heads);
  TORCH_CHECK(d_model % num_heads == 0, "MultiHeadAttention: d_model (", d_model,
              ") must be divisible by num_heads (", num_heads, ")");

  q_linear = register_module("q_linear", torch::nn::Linear(d_model, d_model));
  k_linear = register_module("k_linear", torch::nn::Linear(d_model, d_model));
  v_linear = register_module("v_linear", torch::nn::Linear(d_model, d_model));

  out_linear = register_module("out_linear", torch::nn::Linear(d_model, d_model));
}

torch::Tensor MultiHeadAttentionImpl::forward(const torch::Tensor& query, const torch::Tensor& key,
                                              const torch::Tensor& value, const torch::Tensor& mask) {
  TORCH_CHECK(query.dim() == 3 && query.size(2) == d_model, "MultiHeadAttention: query must be (B, Nq, ",
              d_model, "), got ", query.sizes());
  TORCH_CHECK(key.dim() == 3 && key.sizes() == value.sizes() && key.size(0) == query.size(0) &&
                  key.size(2) == d_model,
              "MultiHeadAttention: key and value must both be (B, Nk, ", d_model, "), got ", key.sizes(), " and ",
              value.sizes());
  const int64_t B = query.size(0);
  const int64_t Nq = query.size(1);
  const int64_t Nk = key.size(1);

  const torch::Tensor q = q_linear(query);  // (B, Nq, D)
  const torch::Tensor k = k_linear(key);    // (B, Nk, D)
  const torch::Tensor v = v_linear(value);  // (B, Nk, D)

  const auto split_heads = [&](const torch::Tensor& t, int64_t length) {
    return t.view({B, length, num_heads, d_k}).transpose(1, 2);
  };
  const torch::Tensor qh = split_heads(q, Nq);  // (B, H, Nq, d_k)
  const torch::Tensor kh = split_heads(k, Nk);  // (B, H, Nk, d_k)
  const torch::Tensor vh = split_heads(v, Nk);  // (B, H, Nk, d_k)

  c10::optional<torch::Tensor> bias;
  if (mask.defined()) {
    bias = torch::zeros({1}, qh.options()).masked_fill(mask == 0, -std::numeric_limits<double>::infinity());
  }
  const torch::Tensor context = std::get<0>(at::_scaled_dot_product_attention(qh, kh, vh, bias));

  const torch::Tensor merged = context.transpose(1, 2).contiguous().view({B, Nq, d_model});

  return out_linear(merged);
}
