// WRONG: the projections are reshaped straight to (B, H, N, d_k) and the
// heads merged back by the inverse reshape, so the two mistakes cancel in
// the shapes but every "head" holds pieces of several tokens.
#include "mha.h"

#include <cmath>
#include <limits>

MultiHeadAttentionImpl::MultiHeadAttentionImpl(int64_t d_model, int64_t num_heads)
    : d_model(d_model), num_heads(num_heads), d_k(num_heads > 0 ? d_model / num_heads : 0) {
  TORCH_CHECK(num_heads > 0 && d_model % num_heads == 0, "num_heads must divide d_model");
  q_linear = register_module("q_linear", torch::nn::Linear(d_model, d_model));
  k_linear = register_module("k_linear", torch::nn::Linear(d_model, d_model));
  v_linear = register_module("v_linear", torch::nn::Linear(d_model, d_model));
  out_linear = register_module("out_linear", torch::nn::Linear(d_model, d_model));
}

torch::Tensor MultiHeadAttentionImpl::forward(const torch::Tensor& query, const torch::Tensor& key,
                                              const torch::Tensor& value, const torch::Tensor& mask) {
  const auto batch = query.size(0);
  auto heads = [&](const torch::Tensor& t) { return t.reshape({batch, num_heads, -1, d_k}); };
  auto q = heads(q_linear(query));
  auto k = heads(k_linear(key));
  auto v = heads(v_linear(value));
  auto scores = q.matmul(k.transpose(2, 3)) * (1.0 / std::sqrt(double(d_k)));
  if (mask.defined()) scores = scores.masked_fill(mask == 0, -std::numeric_limits<double>::infinity());
  auto context = scores.softmax(-1).matmul(v);
  return out_linear(context.reshape({batch, query.size(1), d_model}));
}
