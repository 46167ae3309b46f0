// Wrong: the mask is used without checking mask.defined(), so a call without a mask throws
// (comparing an undefined tensor with 0).
#include "sdpa.h"

#include <cmath>
#include <limits>

std::tuple<torch::Tensor, torch::Tensor> scaled_dot_product_attention(
    const torch::Tensor& query, const torch::Tensor& key, const torch::Tensor& value,
    const torch::Tensor& mask) {
  const auto d_k = query.size(-1);
  auto scores = torch::matmul(query, key.transpose(-2, -1)) / std::sqrt(static_cast<double>(d_k));
  scores = scores.masked_fill(mask == 0, -std::numeric_limits<double>::infinity());
  auto weights = torch::softmax(scores, -1);
  return {torch::matmul(weights, value), weights};
}
