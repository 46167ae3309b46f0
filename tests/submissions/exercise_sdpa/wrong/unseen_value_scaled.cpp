// Wrong: the 1/sqrt(d_k) scale is applied to the values instead of the scores, so the softmax
// sees unscaled logits and the output is shrunk instead.
#include "sdpa.h"

#include <cmath>
#include <limits>

std::tuple<torch::Tensor, torch::Tensor> scaled_dot_product_attention(
    const torch::Tensor& query, const torch::Tensor& key, const torch::Tensor& value,
    const torch::Tensor& mask) {
  const auto d_k = query.size(-1);
  auto scores = torch::matmul(query, key.transpose(-2, -1));
  if (mask.defined()) {
    scores = scores.masked_fill(mask == 0, -std::numeric_limits<double>::infinity());
  }
  auto weights = torch::softmax(scores, -1);
  auto scaled_value = value / std::sqrt(static_cast<double>(d_k));
  return {torch::matmul(weights, scaled_value), weights};
}
