// Wrong: key is "transposed" with reshape({B, H, d_k, Nk}). The shape is right, but a
// reshape reorders the numbers instead of swapping the axes.
#include "sdpa.h"

#include <cmath>
#include <limits>

std::tuple<torch::Tensor, torch::Tensor> scaled_dot_product_attention(
    const torch::Tensor& query, const torch::Tensor& key, const torch::Tensor& value,
    const torch::Tensor& mask) {
  const int64_t B = key.size(0), H = key.size(1), Nk = key.size(2), d_k = key.size(3);
  const auto key_t = key.reshape({B, H, d_k, Nk});
  auto scores = torch::matmul(query, key_t) / std::sqrt(static_cast<double>(d_k));
  if (mask.defined()) {
    scores = scores.masked_fill(mask == 0, -std::numeric_limits<double>::infinity());
  }
  auto weights = torch::softmax(scores, -1);
  auto output = torch::matmul(weights, value);
  return {output, weights};
}
