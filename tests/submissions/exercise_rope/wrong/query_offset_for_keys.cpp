// Wrong: rope_attention rotates the keys at the query's offset (query_offset)
// instead of their own (key_offset).
#include "rope.h"

#include <cmath>

torch::Tensor apply_rope(const torch::Tensor& x, int64_t offset) {
  const int64_t n = x.size(-2), d = x.size(-1), half = d / 2;
  auto inv_freq = torch::pow(10000.0, torch::arange(half, x.options()) * (-2.0 / d));
  auto positions = torch::arange(offset, offset + n, x.options());
  auto angles = torch::outer(positions, inv_freq);
  auto cos = angles.cos(), sin = angles.sin();
  auto x1 = x.slice(-1, 0, half), x2 = x.slice(-1, half, d);
  return torch::cat({x1 * cos - x2 * sin, x2 * cos + x1 * sin}, -1);
}

std::tuple<torch::Tensor, torch::Tensor> rope_attention(const torch::Tensor& query, const torch::Tensor& key,
                                                        const torch::Tensor& value, int64_t query_offset,
                                                        int64_t key_offset) {
  // same positions for q and k so that they line up
  auto q = apply_rope(query, query_offset);
  auto k = apply_rope(key, query_offset);
  auto scores = torch::matmul(q, k.transpose(-2, -1)) / std::sqrt(static_cast<double>(query.size(-1)));
  auto weights = torch::softmax(scores, -1);
  return {torch::matmul(weights, value), weights};
}
