// Accepted: the scale is a float32 constant, 1.0f / std::sqrt(float(d_k)), multiplied in;
// in float64 it differs from 1/sqrt(d_k) only by float32 rounding (about 3e-8 relative).
#include "sdpa.h"

#include <cmath>
#include <limits>

std::tuple<torch::Tensor, torch::Tensor> scaled_dot_product_attention(
    const torch::Tensor& query, const torch::Tensor& key, const torch::Tensor& value,
    const torch::Tensor& mask) {
  const int64_t d_k = query.size(-1);
  const float scale = 1.0f / std::sqrt(float(d_k));
  auto scores = torch::matmul(query, key.transpose(-2, -1)) * scale;
  if (mask.defined()) {
    scores = scores.masked_fill(mask == 0, -std::numeric_limits<float>::infinity());
  }
  auto weights = torch::softmax(scores, -1);
  return {torch::matmul(weights, value), weights};
}
