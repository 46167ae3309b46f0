// Scales the queries before the product (q/sqrt(d_k) . k = (q . k)/sqrt(d_k),
// cheaper when Nk is large) and masks with torch::where.
#include <cmath>
#include <limits>

#include "mha.h"

MultiHeadAttentionImpl::MultiHeadAttentionImpl(int64_t d_model, int64_t num_heads)
    : d_model(d_model), num_heads(num_heads), d_k(num_heads > 0 ? d_model / num_heads : 0) {
  TORCH_CHECK(num_heads > 0 && d_model % num_heads == 0, "d_model % num_heads != 0");
  q_linear = register_module("q_linear", torch::nn::Linear(d_model, d_model));
  k_linear = register_module("k_linear", torch::nn::Linear(d_model, d_model));
  v_linear = register_module("v_linear", torch::nn::Linear(d_model, d_model));
  out_linear = register_module("out_linear", torch::nn::Linear(d_model, d_model));
}

torch::Tensor MultiHeadAttentionImpl::forward(const torch::Tensor& query, const torch::Tensor& key,
                                              const torch::Tensor& value, const torch::Tensor& mask) {
  const auto B = query.size(0);
  const auto Nq = query.size(1);
  const auto Nk = value.size(1);

  auto q = q_linear(query).view({B, Nq, num_heads, d_k}).transpose(1, 2) / std::sqrt(static_cast<double>(d_k));
  auto k = k_linear(key).view({B, Nk, num_heads, d_k}).transpose(1, 2);
  auto v = v_linear(value).view({B, Nk, num_heads, d_k}).transpose(1, 2);

  auto scores = torch::matmul(q, k.transpose(-1, -2));
  if (mask.defined()) {
    auto minus_inf = torch::full({}, -std::numeric_limits<double>::infinity(), scores.options());
    scores = torch::where(mask != 0, scores, minus_inf);
  }
  auto context = torch::matmul(torch::softmax(scores, -1), v);
  return out_linear(context.transpose(1, 2).reshape({B, Nq, d_model}));
}
