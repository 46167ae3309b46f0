// Wrong: the softmax runs over each head's whole (Nq * Nk) score matrix, flattened, instead of
// over the keys of each query; only a single query gets the right weights.
#include "sdpa.h"

#include <cmath>
#include <limits>

std::tuple<torch::Tensor, torch::Tensor> scaled_dot_product_attention(
    const torch::Tensor& query, const torch::Tensor& key, const torch::Tensor& value,
    const torch::Tensor& mask) {
  const auto d_k = query.size(-1);
  auto scores = torch::matmul(query, key.transpose(-2, -1)) / std::sqrt(static_cast<double>(d_k));
  if (mask.defined()) {
    scores = scores.masked_fill(mask == 0, -std::numeric_limits<double>::infinity());
  }
  auto weights = torch::softmax(scores.flatten(-2), -1).view_as(scores);
  return {torch::matmul(weights, value), weights};
}
