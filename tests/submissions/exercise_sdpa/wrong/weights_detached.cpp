// Wrong: the weights are detached "so the returned attention map holds no graph", but the same
// detached tensor computes the output, so no gradient reaches query or key.
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
  auto weights = torch::softmax(scores, -1).detach();
  auto output = torch::matmul(weights, value);
  return {output, weights};
}
