// Wrong: a typo in the fill value: -1e-9 instead of -1e9, so masked scores become (almost) 0
// and masked keys keep their weight.
#include "sdpa.h"

#include <cmath>
#include <limits>

std::tuple<torch::Tensor, torch::Tensor> scaled_dot_product_attention(
    const torch::Tensor& query, const torch::Tensor& key, const torch::Tensor& value,
    const torch::Tensor& mask) {
  const auto d_k = query.size(-1);
  auto scores = torch::matmul(query, key.transpose(-2, -1)) / std::sqrt(static_cast<double>(d_k));
  if (mask.defined()) {
    scores = scores.masked_fill(mask == 0, -1e-9);
  }
  auto weights = torch::softmax(scores, -1);
  return {torch::matmul(weights, value), weights};
}
