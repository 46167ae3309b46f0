// Divides by d_k itself, forgetting the square root.
#include <limits>

#include "mha.h"

MultiHeadAttentionImpl::MultiHeadAttentionImpl(int64_t d_model, int64_t num_heads)
    : d_model(d_model), num_heads(num_heads), d_k(num_heads > 0 ? d_model / num_heads : 0) {
  TORCH_CHECK(num_heads > 0 && d_model % num_heads == 0, "d_model must be divisible by num_heads");
  q_linear = register_module("q_linear", torch::nn::Linear(d_model, d_model));
  k_linear = register_module("k_linear", torch::nn::Linear(d_model, d_model));
  v_linear = register_module("v_linear", torch::nn::Linear(d_model, d_model));
  out_linear = register_module("out_linear", torch::nn::Linear(d_model, d_model));
}

torch::Tensor MultiHeadAttentionImpl::forward(const torch::Tensor& query, const torch::Tensor& key,
                                              const torch::Tensor& value, const torch::Tensor& mask) {
  const auto B = query.size(0), Nq = query.size(1), Nk = key.size(1);
  auto q = q_linear(query).reshape({B, Nq, num_heads, d_k}).permute({0, 2, 1, 3});
  auto k = k_linear(key).reshape({B, Nk, num_heads, d_k}).permute({0, 2, 1, 3});
  auto v = v_linear(value).reshape({B, Nk, num_heads, d_k}).permute({0, 2, 1, 3});
  auto scores = torch::matmul(q, k.transpose(-2, -1)) / static_cast<double>(d_k);
  if (mask.defined()) scores = scores.masked_fill(mask == 0, -std::numeric_limits<double>::infinity());
  auto out = torch::matmul(torch::softmax(scores, -1), v).permute({0, 2, 1, 3}).reshape({B, Nq, d_model});
  return out_linear(out);
}
