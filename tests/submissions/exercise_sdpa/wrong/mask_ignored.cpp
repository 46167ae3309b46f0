// Wrong: the mask argument is accepted but never used.
#include "sdpa.h"

#include <cmath>

std::tuple<torch::Tensor, torch::Tensor> scaled_dot_product_attention(
    const torch::Tensor& query, const torch::Tensor& key, const torch::Tensor& value,
    const torch::Tensor& mask) {
  const auto d_k = query.size(-1);
  auto scores = torch::matmul(query, key.transpose(-2, -1)) / std::sqrt(static_cast<double>(d_k));
  // TODO: masking
  auto weights = torch::softmax(scores, -1);
  auto output = torch::matmul(weights, value);
  return {output, weights};
}
