// Wrong (not in the mistake list): the sines and cosines are added to x, like
// the sinusoidal positional encoding, instead of rotating the pairs. The
// scores then depend on absolute positions, not only on their difference.
#include "rope.h"

#include <cmath>

torch::Tensor apply_rope(const torch::Tensor& x, int64_t offset) {
  const int64_t n = x.size(-2), d = x.size(-1);
  auto theta = torch::pow(10000.0, torch::arange(0, d, 2, x.options()) * (-1.0 / d));
  auto pos = torch::arange(offset, offset + n, x.options());
  auto angles = torch::outer(pos, theta);  // (N, d/2)
  // position signal: sin on the first half, cos on the second
  auto pe = torch::cat({angles.sin(), angles.cos()}, -1);  // (N, d)
  return x + pe;
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
