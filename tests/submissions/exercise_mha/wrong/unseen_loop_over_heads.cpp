// Correct numbers, but one matmul/softmax per head in a Python-style loop
// instead of one batched product over (B, H, ...).
#include <cmath>
#include <limits>
#include <vector>

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
  auto q = q_linear(query), k = k_linear(key), v = v_linear(value);
  const double scale = 1.0 / std::sqrt(static_cast<double>(d_k));
  std::vector<torch::Tensor> heads;
  for (int64_t h = 0; h < num_heads; ++h) {
    auto qh = q.narrow(-1, h * d_k, d_k);  // (B, Nq, d_k)
    auto kh = k.narrow(-1, h * d_k, d_k);  // (B, Nk, d_k)
    auto vh = v.narrow(-1, h * d_k, d_k);
    auto scores = torch::matmul(qh, kh.transpose(-2, -1)) * scale;  // (B, Nq, Nk)
    if (mask.defined()) {
      // Pick this head's slice of the (broadcastable) mask.
      auto m = mask.dim() == 4 ? mask.select(1, mask.size(1) == 1 ? 0 : h) : mask;
      scores = scores.masked_fill(m == 0, -std::numeric_limits<double>::infinity());
    }
    heads.push_back(torch::matmul(torch::softmax(scores, -1), vh));
  }
  return out_linear(torch::cat(heads, -1));
}
