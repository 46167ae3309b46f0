// Accepted: mask applied with torch::where, softmax written by hand in its stable form
// (subtract the row maximum, exp, divide by the row sum).
#include "sdpa.h"

#include <cmath>
#include <limits>

std::tuple<torch::Tensor, torch::Tensor> scaled_dot_product_attention(
    const torch::Tensor& query, const torch::Tensor& key, const torch::Tensor& value,
    const torch::Tensor& mask) {
  const double d_k = static_cast<double>(query.size(-1));
  auto scores = torch::matmul(query, key.transpose(-2, -1)) / std::sqrt(d_k);

  if (mask.defined()) {
    const auto neg_inf = torch::full_like(scores, -std::numeric_limits<double>::infinity());
    scores = torch::where(mask != 0, scores, neg_inf);
  }

  // Stable softmax over the keys. Masked entries are -inf: -inf - max = -inf, exp = 0.
  const auto row_max = scores.amax(/*dim=*/-1, /*keepdim=*/true);
  const auto exps = torch::exp(scores - row_max);
  auto weights = exps / exps.sum(/*dim=*/-1, /*keepdim=*/true);

  auto output = torch::matmul(weights, value);
  return {output, weights};
}
