// Wrong: softmax(scores, 1), as for a 2-D matrix; on (B, H, Nq, Nk) dimension 1 is the heads,
// not the keys.
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
  // softmax along the rows
  auto weights = torch::softmax(scores, 1);
  auto output = torch::matmul(weights, value);
  return {output, weights};
}
