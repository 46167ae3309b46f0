// Wrong: the scores are divided by d_k instead of sqrt(d_k).
#include "sdpa.h"

#include <limits>

std::tuple<torch::Tensor, torch::Tensor> scaled_dot_product_attention(
    const torch::Tensor& query, const torch::Tensor& key, const torch::Tensor& value,
    const torch::Tensor& mask) {
  const double d_k = static_cast<double>(query.size(-1));
  auto scores = torch::matmul(query, key.transpose(-2, -1)) / d_k;
  if (mask.defined()) {
    scores = scores.masked_fill(mask == 0, -std::numeric_limits<double>::infinity());
  }
  auto weights = torch::softmax(scores, -1);
  auto output = torch::matmul(weights, value);
  return {output, weights};
}
