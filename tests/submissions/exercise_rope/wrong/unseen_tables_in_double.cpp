// A learner's RoPE with the tables computed in double "for precision"
// and never converted back to the input's dtype.
#include "rope.h"

#include <cmath>

torch::Tensor apply_rope(const torch::Tensor& x, int64_t offset) {
  const int64_t n = x.size(-2);
  const int64_t d = x.size(-1);
  const int64_t half = d / 2;
  TORCH_CHECK(d % 2 == 0, "apply_rope: head dim must be even, got ", d);

  // theta_i = 10000^(-2i/d), i = 0 .. d/2 - 1
  // the tables in double for precision: sin/cos of large angles lose digits in float
  auto opts = x.options().dtype(torch::kDouble);
  auto i = torch::arange(half, opts);
  auto theta = torch::pow(10000.0, i * (-2.0 / static_cast<double>(d)));

  // token n is at position offset + n
  auto pos = torch::arange(offset, offset + n, opts);
  auto angles = torch::outer(pos, theta);  // (N, d/2), broadcasts over B and H
  auto cos = angles.cos();
  auto sin = angles.sin();

  auto x1 = x.slice(-1, 0, half);  // channels 0 .. d/2-1
  auto x2 = x.slice(-1, half, d);  // channels d/2 .. d-1
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
