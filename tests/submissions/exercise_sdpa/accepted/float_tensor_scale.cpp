// Accepted: the scale is a float32 0-dim tensor, sqrt(d_k) computed by LibTorch, and the
// scores are divided by it. A 0-dim tensor does not take part in type promotion against a
// dimensioned tensor of the same kind, so float64 inputs still give float64 results.
#include "sdpa.h"

#include <limits>

std::tuple<torch::Tensor, torch::Tensor> scaled_dot_product_attention(
    const torch::Tensor& query, const torch::Tensor& key, const torch::Tensor& value,
    const torch::Tensor& mask) {
  const auto sqrt_dk = torch::tensor(static_cast<float>(query.size(-1))).sqrt();
  auto scores = torch::matmul(query, key.transpose(-2, -1)) / sqrt_dk;
  if (mask.defined()) {
    scores = scores.masked_fill(mask.logical_not(), -std::numeric_limits<float>::infinity());
  }
  auto weights = torch::softmax(scores, -1);
  return {torch::matmul(weights, value), weights};
}
