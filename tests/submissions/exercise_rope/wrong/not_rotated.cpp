// Wrong: apply_rope is right, but rope_attention never calls it: plain scaled
// dot-product attention on the raw query and key.
#include "rope.h"

#include <cmath>

torch::Tensor apply_rope(const torch::Tensor& x, int64_t offset) {
  const int64_t n = x.size(-2), d = x.size(-1), half = d / 2;
  auto theta = torch::pow(10000.0, torch::arange(0, d, 2, x.options()) / (-static_cast<double>(d)));
  auto pos = torch::arange(offset, offset + n, x.options());
  auto angles = torch::outer(pos, theta);
  auto x1 = x.slice(-1, 0, half), x2 = x.slice(-1, half, d);
  return torch::cat({x1 * angles.cos() - x2 * angles.sin(), x2 * angles.cos() + x1 * angles.sin()}, -1);
}

std::tuple<torch::Tensor, torch::Tensor> rope_attention(const torch::Tensor& query, const torch::Tensor& key,
                                                        const torch::Tensor& value, int64_t query_offset,
                                                        int64_t key_offset) {
  // scaled dot-product attention
  auto scores = torch::matmul(query, key.transpose(-2, -1)) / std::sqrt(static_cast<double>(query.size(-1)));
  auto weights = torch::softmax(scores, -1);
  return {torch::matmul(weights, value), weights};
}
