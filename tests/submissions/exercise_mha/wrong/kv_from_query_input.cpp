// WRONG: written as self-attention: the keys and the values are projected
// from the query input, so in cross-attention the other sequence is never read.
#include "mha.h"

#include <cmath>
#include <limits>

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
  const auto B = query.size(0), N = query.size(1);
  auto split = [&](const torch::Tensor& t) { return t.reshape({B, N, num_heads, d_k}).transpose(1, 2); };
  auto q = split(q_linear(query)), k = split(k_linear(query)), v = split(v_linear(query));
  auto scores = q.matmul(k.transpose(-2, -1)) / std::sqrt(double(d_k));
  if (mask.defined()) scores = scores.masked_fill(mask == 0, -std::numeric_limits<double>::infinity());
  auto out = scores.softmax(-1).matmul(v).transpose(1, 2).reshape({B, N, d_model});
  return out_linear(out);
}
