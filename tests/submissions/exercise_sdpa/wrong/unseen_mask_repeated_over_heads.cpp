// Wrong: the mask is repeated H times along dim 1 "so every head gets it" (copied from code
// where the mask is (B, 1, N, N)); a per-head (B, H, Nq, Nk) mask becomes (B, H*H, Nq, Nk).
#include "sdpa.h"

#include <cmath>
#include <limits>

std::tuple<torch::Tensor, torch::Tensor> scaled_dot_product_attention(
    const torch::Tensor& query, const torch::Tensor& key, const torch::Tensor& value,
    const torch::Tensor& mask) {
  const auto d_k = query.size(-1);
  const auto num_heads = query.size(1);
  auto scores = torch::matmul(query, key.transpose(-2, -1)) / std::sqrt(static_cast<double>(d_k));
  if (mask.defined()) {
    auto head_mask = mask.repeat({1, num_heads, 1, 1});
    scores = scores.masked_fill(head_mask == 0, -std::numeric_limits<double>::infinity());
  }
  auto weights = torch::softmax(scores, -1);
  return {torch::matmul(weights, value), weights};
}
