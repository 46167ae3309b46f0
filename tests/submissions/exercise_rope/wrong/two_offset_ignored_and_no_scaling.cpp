// Two independent mistakes: the offset is never used (every call puts its
// tokens at positions 0 .. N-1), and the scores are never divided by sqrt(d).
#include "rope.h"

#include <cmath>

torch::Tensor apply_rope(const torch::Tensor& x, int64_t offset) {
  const int64_t n = x.size(-2), d = x.size(-1), half = d / 2;
  auto theta = torch::pow(10000.0, torch::arange(0, d, 2, x.options()) / (-static_cast<double>(d)));
  auto pos = torch::arange(0, n, x.options());  // positions of the N tokens
  auto angles = torch::outer(pos, theta);
  auto cos = angles.cos(), sin = angles.sin();

  auto x1 = x.slice(-1, 0, half);
  auto x2 = x.slice(-1, half, d);
  return torch::cat({x1 * cos - x2 * sin, x2 * cos + x1 * sin}, -1);
}

std::tuple<torch::Tensor, torch::Tensor> rope_attention(const torch::Tensor& query, const torch::Tensor& key,
                                                        const torch::Tensor& value, int64_t query_offset,
                                                        int64_t key_offset) {
  auto q = apply_rope(query, query_offset);
  auto k = apply_rope(key, key_offset);
  auto scores = torch::matmul(q, k.transpose(-2, -1));
  auto weights = torch::softmax(scores, -1);
  return {torch::matmul(weights, value), weights};
}
