// Copy-paste slip: the values go through k_linear; v_linear is never used.
#include <cmath>
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
  auto Q = q_linear(query).view({B, Nq, num_heads, d_k}).transpose(1, 2);
  auto K = k_linear(key).view({B, Nk, num_heads, d_k}).transpose(1, 2);
  auto V = k_linear(value).view({B, Nk, num_heads, d_k}).transpose(1, 2);
  auto scores = torch::matmul(Q, K.transpose(-2, -1)) / std::sqrt(static_cast<double>(d_k));
  if (mask.defined()) scores = scores.masked_fill(mask == 0, -std::numeric_limits<double>::infinity());
  auto weights = torch::softmax(scores, -1);
  auto out = torch::matmul(weights, V).transpose(1, 2).contiguous().view({B, Nq, d_model});
  return out_linear(out);
}
