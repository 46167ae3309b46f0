// Wrong (not in the mistake list): the mask is reshaped to (B, 1, 1, Nk) as if
// every mask were a padding mask. Padding masks work; a causal (Nq, Nk), a
// (B, 1, Nq, Nk) or a per-head mask cannot be reshaped so, and throws.
#include "mha.h"

#include <cmath>
#include <limits>

MultiHeadAttentionImpl::MultiHeadAttentionImpl(int64_t d_model, int64_t num_heads)
    : d_model(d_model), num_heads(num_heads), d_k(num_heads > 0 ? d_model / num_heads : 0) {
  TORCH_CHECK(num_heads > 0 && d_model % num_heads == 0, "num_heads (", num_heads, ") must divide d_model (",
              d_model, ")");
  q_linear = register_module("q_linear", torch::nn::Linear(d_model, d_model));
  k_linear = register_module("k_linear", torch::nn::Linear(d_model, d_model));
  v_linear = register_module("v_linear", torch::nn::Linear(d_model, d_model));
  out_linear = register_module("out_linear", torch::nn::Linear(d_model, d_model));
}

torch::Tensor MultiHeadAttentionImpl::forward(const torch::Tensor& query, const torch::Tensor& key,
                                              const torch::Tensor& value, const torch::Tensor& mask) {
  const auto batch = query.size(0), q_len = query.size(1), k_len = key.size(1);
  auto split = [&](const torch::Tensor& t, int64_t len) {
    return t.reshape({batch, len, num_heads, d_k}).permute({0, 2, 1, 3});
  };
  auto q = split(q_linear->forward(query), q_len);
  auto k = split(k_linear->forward(key), k_len);
  auto v = split(v_linear->forward(value), k_len);
  auto scores = torch::matmul(q, k.transpose(2, 3)) / std::sqrt(static_cast<double>(d_k));
  if (mask.defined()) {
    auto keys_kept = mask.reshape({batch, 1, 1, k_len});
    scores = scores.masked_fill(keys_kept.logical_not(), -std::numeric_limits<double>::infinity());
  }
  auto context = torch::matmul(torch::softmax(scores, -1), v);
  return out_linear->forward(context.permute({0, 2, 1, 3}).reshape({batch, q_len, d_model}));
}
