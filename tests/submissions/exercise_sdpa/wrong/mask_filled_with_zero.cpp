// Wrong: masked scores are set to 0 instead of -inf, so masked keys still get weight exp(0).
#include "sdpa.h"

#include <cmath>

std::tuple<torch::Tensor, torch::Tensor> scaled_dot_product_attention(
    const torch::Tensor& query, const torch::Tensor& key, const torch::Tensor& value,
    const torch::Tensor& mask) {
  const auto d_k = query.size(-1);
  auto scores = torch::matmul(query, key.transpose(-2, -1)) / std::sqrt(static_cast<double>(d_k));
  if (mask.defined()) {
    scores = scores.masked_fill(mask == 0, 0.0);
  }
  auto weights = torch::softmax(scores, -1);
  auto output = torch::matmul(weights, value);
  return {output, weights};
}
