// Wrong: positions counted from 1 (offset + 1 .. offset + N) instead of from
// the offset itself.
#include "rope.h"

#include <cmath>

torch::Tensor apply_rope(const torch::Tensor& x, int64_t offset) {
  const int64_t n = x.size(-2), d = x.size(-1), half = d / 2;
  auto theta = torch::exp(torch::arange(0, d, 2, x.options()) * (-std::log(10000.0) / d));
  // positions 1, 2, ..., N (shifted by the offset)
  auto pos = torch::arange(offset + 1, offset + n + 1, x.options());
  auto angles = pos.unsqueeze(1) * theta.unsqueeze(0);

  auto x1 = x.narrow(-1, 0, half);
  auto x2 = x.narrow(-1, half, half);
  return torch::cat({x1 * angles.cos() - x2 * angles.sin(), x2 * angles.cos() + x1 * angles.sin()}, -1);
}

std::tuple<torch::Tensor, torch::Tensor> rope_attention(const torch::Tensor& query, const torch::Tensor& key,
                                                        const torch::Tensor& value, int64_t query_offset,
                                                        int64_t key_offset) {
  auto q = apply_rope(query, query_offset);
  auto k = apply_rope(key, key_offset);
  auto scores = q.matmul(k.transpose(-2, -1)) / std::sqrt(static_cast<double>(q.size(-1)));
  auto weights = scores.softmax(-1);
  return {weights.matmul(value), weights};
}
