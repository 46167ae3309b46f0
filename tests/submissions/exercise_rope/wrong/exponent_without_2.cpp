// Wrong: theta_i = 10000^(-i/d): arange over the pair index with no factor 2.
#include "rope.h"

#include <cmath>

torch::Tensor apply_rope(const torch::Tensor& x, int64_t offset) {
  const int64_t n = x.size(-2);
  const int64_t d = x.size(-1);
  const int64_t half = d / 2;

  // one frequency per pair
  auto theta = torch::pow(10000.0, -torch::arange(0, half, x.options()) / d);
  auto pos = torch::arange(offset, offset + n, x.options());
  auto angles = torch::outer(pos, theta);

  auto x1 = x.slice(-1, 0, half);
  auto x2 = x.slice(-1, half, d);
  auto c = torch::cos(angles), s = torch::sin(angles);
  return torch::cat({x1 * c - x2 * s, x2 * c + x1 * s}, -1);
}

std::tuple<torch::Tensor, torch::Tensor> rope_attention(const torch::Tensor& query, const torch::Tensor& key,
                                                        const torch::Tensor& value, int64_t query_offset,
                                                        int64_t key_offset) {
  auto q = apply_rope(query, query_offset);
  auto k = apply_rope(key, key_offset);
  auto scores = torch::matmul(q, k.transpose(-2, -1)) / std::sqrt(static_cast<double>(query.size(-1)));
  auto weights = torch::softmax(scores, -1);
  return {torch::matmul(weights, value), weights};
}
