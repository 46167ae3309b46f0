// The textbook answer: view + transpose to split, transpose + contiguous + view to merge.
#include "mha.h"

#include <cmath>
#include <limits>

MultiHeadAttentionImpl::MultiHeadAttentionImpl(int64_t d_model, int64_t num_heads)
    : d_model(d_model), num_heads(num_heads), d_k(num_heads > 0 ? d_model / num_heads : 0) {
  TORCH_CHECK(num_heads > 0 && d_model % num_heads == 0, "d_model (", d_model,
              ") must be divisible by num_heads (", num_heads, ")");
  q_linear = register_module("q_linear", torch::nn::Linear(d_model, d_model));
  k_linear = register_module("k_linear", torch::nn::Linear(d_model, d_model));
  v_linear = register_module("v_linear", torch::nn::Linear(d_model, d_model));
  out_linear = register_module("out_linear", torch::nn::Linear(d_model, d_model));
}

torch::Tensor MultiHeadAttentionImpl::forward(const torch::Tensor& query, const torch::Tensor& key,
                                              const torch::Tensor& value, const torch::Tensor& mask) {
  const auto batch_size = query.size(0);
  const auto q_len = query.size(1);
  const auto kv_len = key.size(1);

  auto Q = q_linear(query).view({batch_size, q_len, num_heads, d_k}).transpose(1, 2);
  auto K = k_linear(key).view({batch_size, kv_len, num_heads, d_k}).transpose(1, 2);
  auto V = v_linear(value).view({batch_size, kv_len, num_heads, d_k}).transpose(1, 2);

  auto scores = torch::matmul(Q, K.transpose(-2, -1)) / std::sqrt(static_cast<double>(d_k));
  if (mask.defined()) {
    scores = scores.masked_fill(mask == 0, -std::numeric_limits<double>::infinity());
  }
  auto attention_weights = torch::softmax(scores, -1);
  auto output = torch::matmul(attention_weights, V);
  output = output.transpose(1, 2).contiguous().view({batch_size, q_len, d_model});
  return out_linear(output);
}
