// Accepted: Tensor::mT() for the transpose of the last two dimensions, softmax as
// exp(shifted - logsumexp(shifted)), mask filled with -infinity.
#include "sdpa.h"

#include <cmath>
#include <limits>

std::tuple<torch::Tensor, torch::Tensor> scaled_dot_product_attention(
    const torch::Tensor& query, const torch::Tensor& key, const torch::Tensor& value,
    const torch::Tensor& mask) {
  const auto scale = std::sqrt(static_cast<double>(query.size(-1)));
  auto scores = query.matmul(key.mT()).div(scale);

  if (mask.defined()) {
    scores = scores.masked_fill(mask.eq(0), -std::numeric_limits<double>::infinity());
  }

  // softmax(s) = exp(s - logsumexp(s)). Shifting by the row maximum first keeps the
  // logsumexp term small, so large logits lose no precision in float32.
  const auto shifted = scores - scores.amax(/*dim=*/-1, /*keepdim=*/true);
  auto weights = (shifted - shifted.logsumexp(/*dim=*/{-1}, /*keepdim=*/true)).exp();
  auto output = weights.matmul(value);
  return {output, weights};
}
