// Wrong: d_k is read from value.size(-1) (that is d_v), so the scale is wrong whenever
// d_v != d_k.
#include "sdpa.h"

#include <cmath>
#include <limits>

std::tuple<torch::Tensor, torch::Tensor> scaled_dot_product_attention(
    const torch::Tensor& query, const torch::Tensor& key, const torch::Tensor& value,
    const torch::Tensor& mask) {
  const int64_t head_dim = value.size(-1);
  auto scores = torch::matmul(query, key.transpose(-2, -1));
  scores = scores / std::sqrt(static_cast<double>(head_dim));
  if (mask.defined()) {
    scores = scores.masked_fill(mask == 0, -std::numeric_limits<double>::infinity());
  }
  auto weights = torch::softmax(scores, -1);
  auto output = torch::matmul(weights, value);
  return {output, weights};
}
