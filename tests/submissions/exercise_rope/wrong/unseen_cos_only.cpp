// Wrong (not in the mistake list): only the cosine term. Each channel is
// scaled by cos(p theta_i), its partner never mixed in: no rotation at all,
// and the vectors shrink.
#include "rope.h"

#include <cmath>

torch::Tensor apply_rope(const torch::Tensor& x, int64_t offset) {
  const int64_t n = x.size(-2), d = x.size(-1);
  auto theta = torch::exp(torch::arange(0, d, 2, x.options()) * (-std::log(10000.0) / d));
  auto pos = torch::arange(offset, offset + n, x.options()).unsqueeze(-1);
  auto angles = pos * theta;                      // (N, d/2)
  auto cos = torch::cat({angles, angles}, -1).cos();  // (N, d)
  // x_rot = x * cos(m theta)
  return x * cos;
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
