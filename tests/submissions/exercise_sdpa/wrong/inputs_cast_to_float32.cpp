// Wrong: the inputs are cast to float32 "for speed", so float64 inputs lose their precision
// and come back as float32.
#include "sdpa.h"

#include <cmath>
#include <limits>

std::tuple<torch::Tensor, torch::Tensor> scaled_dot_product_attention(
    const torch::Tensor& query, const torch::Tensor& key, const torch::Tensor& value,
    const torch::Tensor& mask) {
  const auto q = query.to(torch::kFloat);
  const auto k = key.to(torch::kFloat);
  const auto v = value.to(torch::kFloat);

  const auto d_k = q.size(-1);
  auto scores = torch::matmul(q, k.transpose(-2, -1)) / std::sqrt(static_cast<double>(d_k));
  if (mask.defined()) {
    scores = scores.masked_fill(mask == 0, -std::numeric_limits<float>::infinity());
  }
  auto weights = torch::softmax(scores, -1);
  auto output = torch::matmul(weights, v);
  return {output, weights};
}
