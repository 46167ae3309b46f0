// Wrong: the scores are divided by sqrt(2 * d_k) ("the variance of q.k is 2 * d_k"), not sqrt(d_k).
#include "sdpa.h"

#include <cmath>
#include <limits>

std::tuple<torch::Tensor, torch::Tensor> scaled_dot_product_attention(
    const torch::Tensor& query, const torch::Tensor& key, const torch::Tensor& value,
    const torch::Tensor& mask) {
  const auto d_k = query.size(-1);
  auto scores = torch::matmul(query, key.transpose(-2, -1)) / std::sqrt(2.0 * d_k);
  if (mask.defined()) {
    scores = scores.masked_fill(mask == 0, -std::numeric_limits<double>::infinity());
  }
  auto weights = torch::softmax(scores, -1);
  return {torch::matmul(weights, value), weights};
}
