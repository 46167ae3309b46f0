// Wrong: the mask is view()ed to the scores' shape (B, H, Nq, Nk), which only works for a full
// per-head mask; padding (B, 1, 1, Nk), causal (Nq, Nk) and (B, 1, Nq, Nk) masks throw.
#include "sdpa.h"

#include <cmath>
#include <limits>

std::tuple<torch::Tensor, torch::Tensor> scaled_dot_product_attention(
    const torch::Tensor& query, const torch::Tensor& key, const torch::Tensor& value,
    const torch::Tensor& mask) {
  const auto d_k = query.size(-1);
  auto scores = torch::matmul(query, key.transpose(-2, -1)) / std::sqrt(static_cast<double>(d_k));
  if (mask.defined()) {
    auto m = mask.view(scores.sizes());  // make sure the mask lines up with the scores
    scores = scores.masked_fill(m == 0, -std::numeric_limits<double>::infinity());
  }
  auto weights = torch::softmax(scores, -1);
  return {torch::matmul(weights, value), weights};
}
