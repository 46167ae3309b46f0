// Wrong (not in the mistake list): the mask is turned into a per-key padding
// mask by keeping its first query row for every query. Padding masks are
// unchanged; causal, (B, 1, Nq, Nk) and per-head masks lose every row but the
// first, so later queries are masked like query 0 (no error, wrong results).
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
  const auto B = query.size(0), Nq = query.size(1), Nk = key.size(1);
  auto heads = [&](const torch::Tensor& t, int64_t n) { return t.view({B, n, num_heads, d_k}).transpose(1, 2); };
  auto q = heads(q_linear(query), Nq), k = heads(k_linear(key), Nk), v = heads(v_linear(value), Nk);
  auto scores = torch::matmul(q, k.transpose(-2, -1)) / std::sqrt(static_cast<double>(d_k));
  if (mask.defined()) {
    auto per_key = mask.select(-2, 0).unsqueeze(-2);  // one row of keys, shared by every query
    scores = scores.masked_fill(per_key == 0, -std::numeric_limits<double>::infinity());
  }
  auto out = torch::matmul(torch::softmax(scores, -1), v);
  return out_linear(out.transpose(1, 2).contiguous().view({B, Nq, d_model}));
}
