// Wrong: the RoFormer paper's layout, neighbours (2i, 2i + 1) turned
// together, instead of channel i with channel i + d/2.
#include "rope.h"

#include <cmath>

torch::Tensor apply_rope(const torch::Tensor& x, int64_t offset) {
  const int64_t n = x.size(-2), d = x.size(-1);
  // theta_i = 10000^(-2(i-1)/d) in the paper, i = 1..d/2
  auto theta = torch::pow(10000.0, -torch::arange(0, d, 2, x.options()) / d);
  auto pos = torch::arange(offset, offset + n, x.options());
  auto angles = torch::outer(pos, theta);  // (N, d/2)
  auto cos = angles.cos(), sin = angles.sin();

  // pairs (x0, x1), (x2, x3), ... as in eq. (34) of the paper
  auto x_even = x.slice(-1, 0, d, 2);
  auto x_odd = x.slice(-1, 1, d, 2);
  auto out_even = x_even * cos - x_odd * sin;
  auto out_odd = x_odd * cos + x_even * sin;
  // interleave them back: (.., d/2, 2) -> (.., d)
  return torch::stack({out_even, out_odd}, -1).flatten(-2);
}

std::tuple<torch::Tensor, torch::Tensor> rope_attention(const torch::Tensor& query, const torch::Tensor& key,
                                                        const torch::Tensor& value, int64_t query_offset,
                                                        int64_t key_offset) {
  auto q = apply_rope(query, query_offset);
  auto k = apply_rope(key, key_offset);
  auto scores = torch::matmul(q, k.transpose(-2, -1)) / std::sqrt(static_cast<double>(q.size(-1)));
  auto weights = torch::softmax(scores, -1);
  return {torch::matmul(weights, value), weights};
}
