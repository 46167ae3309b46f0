// Wrong: the softmax normalises each key's column over the queries (dim -2).
#include "rope.h"

#include <cmath>

torch::Tensor apply_rope(const torch::Tensor& x, int64_t offset) {
  const int64_t n = x.size(-2), d = x.size(-1), half = d / 2;
  auto theta = torch::exp(torch::arange(0, d, 2, x.options()) * (-std::log(10000.0) / d));
  auto pos = torch::arange(offset, offset + n, x.options()).unsqueeze(1);
  auto angles = pos * theta;  // (N, d/2)
  auto halves = x.chunk(2, -1);
  auto c = angles.cos(), s = angles.sin();
  return torch::cat({halves[0] * c - halves[1] * s, halves[1] * c + halves[0] * s}, -1);
}

std::tuple<torch::Tensor, torch::Tensor> rope_attention(const torch::Tensor& query, const torch::Tensor& key,
                                                        const torch::Tensor& value, int64_t query_offset,
                                                        int64_t key_offset) {
  auto q = apply_rope(query, query_offset);
  auto k = apply_rope(key, key_offset);
  auto scores = torch::matmul(q, k.transpose(-2, -1)) / std::sqrt(static_cast<double>(q.size(-1)));
  auto weights = torch::softmax(scores, -2);
  return {torch::matmul(weights, value), weights};
}
