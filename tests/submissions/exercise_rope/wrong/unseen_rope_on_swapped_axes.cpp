// WRONG (outside the known mistakes): apply_rope swaps the head and token axes
// "to get (B, N, H, d)", then lays the angles over the last two axes as if
// they were (N, d): after the swap those are the heads, so each head is turned
// as one position (head h at offset + h) whatever the token, and the tokens of
// a head are not told apart.
#include "rope.h"

#include <cmath>

torch::Tensor apply_rope(const torch::Tensor& x, int64_t offset) {
  auto t = x.transpose(1, 2);  // (B, N, H, d)... but the angles below follow axis -2
  const int64_t n = t.size(-2), d = t.size(-1), half = d / 2;
  auto pos = torch::arange(offset, offset + n, t.options()).unsqueeze(-1);                // (n, 1)
  auto freq = torch::exp(torch::arange(half, t.options()) * (-2.0 * std::log(10000.0) / d));  // (half)
  auto angle = pos * freq;                                                                  // (n, half)
  auto cos = angle.cos(), sin = angle.sin();
  auto a = t.narrow(-1, 0, half), b = t.narrow(-1, half, half);
  auto turned = torch::cat({a * cos - b * sin, b * cos + a * sin}, -1);
  return turned.transpose(1, 2);
}

std::tuple<torch::Tensor, torch::Tensor> rope_attention(const torch::Tensor& query, const torch::Tensor& key,
                                                        const torch::Tensor& value, int64_t query_offset,
                                                        int64_t key_offset) {
  const double scale = 1.0 / std::sqrt(static_cast<double>(query.size(-1)));
  auto scores = torch::matmul(apply_rope(query, query_offset), apply_rope(key, key_offset).transpose(-2, -1)) * scale;
  auto weights = scores.softmax(-1);
  return {torch::matmul(weights, value), weights};
}
