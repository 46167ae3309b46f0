// Wrong (not in the mistake list): the scores are divided by sqrt(d_v), the
// value's width, instead of sqrt(d). Invisible while d_v == d.
#include "rope.h"

#include <cmath>

torch::Tensor apply_rope(const torch::Tensor& x, int64_t offset) {
  const int64_t n = x.size(-2), d = x.size(-1), half = d / 2;
  auto theta = torch::pow(10000.0, torch::arange(half, x.options()) * (-2.0 / d));
  auto pos = torch::arange(offset, offset + n, x.options());
  auto angles = torch::outer(pos, theta);
  auto x1 = x.narrow(-1, 0, half), x2 = x.narrow(-1, half, half);
  auto c = angles.cos(), s = angles.sin();
  return torch::cat({x1 * c - x2 * s, x2 * c + x1 * s}, -1);
}

std::tuple<torch::Tensor, torch::Tensor> rope_attention(const torch::Tensor& query, const torch::Tensor& key,
                                                        const torch::Tensor& value, int64_t query_offset,
                                                        int64_t key_offset) {
  const auto d_model = value.size(-1);
  auto q = apply_rope(query, query_offset);
  auto k = apply_rope(key, key_offset);
  auto scores = torch::matmul(q, k.transpose(-2, -1)) / std::sqrt(static_cast<double>(d_model));
  auto weights = torch::softmax(scores, -1);
  return {torch::matmul(weights, value), weights};
}
