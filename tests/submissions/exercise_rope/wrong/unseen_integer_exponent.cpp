// Wrong (not in the mistake list): the frequencies are computed in a loop with
// integer arithmetic, -2 * i / d, which is 0 for every i < d/2: every pair
// turns at one radian per position.
#include "rope.h"

#include <cmath>
#include <vector>

torch::Tensor apply_rope(const torch::Tensor& x, int64_t offset) {
  const int64_t n = x.size(-2), d = x.size(-1), half = d / 2;
  std::vector<double> inv_freq;
  for (int64_t i = 0; i < half; ++i) {
    inv_freq.push_back(std::pow(10000.0, -2 * i / d));
  }
  auto theta = torch::tensor(inv_freq, x.options());
  auto pos = torch::arange(offset, offset + n, x.options());
  auto angles = torch::outer(pos, theta);
  auto cos = angles.cos(), sin = angles.sin();
  auto x1 = x.slice(-1, 0, half), x2 = x.slice(-1, half, d);
  return torch::cat({x1 * cos - x2 * sin, x2 * cos + x1 * sin}, -1);
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
