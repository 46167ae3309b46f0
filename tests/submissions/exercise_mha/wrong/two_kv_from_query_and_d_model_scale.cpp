// WRONG twice, self-attention habits: keys and values are projected from the
// query input (cross-attention needs them from key and value), and the scores
// are divided by sqrt(d_model) instead of sqrt(d_k).
#include "mha.h"

#include <cmath>
#include <limits>

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
  const int64_t batch = query.size(0), len = query.size(1);
  auto to_heads = [&](torch::Tensor t) { return t.view({batch, len, num_heads, d_k}).permute({0, 2, 1, 3}); };
  auto q = to_heads(q_linear->forward(query));
  auto k = to_heads(k_linear->forward(query));
  auto v = to_heads(v_linear->forward(query));
  auto scores = torch::matmul(q, k.transpose(-2, -1)) / std::sqrt(static_cast<double>(d_model));
  if (mask.defined()) scores = scores.masked_fill(mask.logical_not(), -std::numeric_limits<double>::infinity());
  auto context = torch::matmul(torch::softmax(scores, -1), v).permute({0, 2, 1, 3}).contiguous();
  return out_linear->forward(context.view({batch, len, d_model}));
}
