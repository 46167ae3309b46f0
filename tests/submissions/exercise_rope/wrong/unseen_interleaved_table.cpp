// Wrong (not in the mistake list): the cos/sin tables are built for the
// interleaved layout (each frequency repeated twice in a row, repeat_interleave)
// but used with rotate_half. Channel i and its partner i + d/2 then read
// different angles: the pair is no longer rotated, and lengths change.
#include "rope.h"

#include <cmath>

namespace {

torch::Tensor rotate_half(const torch::Tensor& x) {
  auto x1 = x.slice(-1, 0, x.size(-1) / 2);
  auto x2 = x.slice(-1, x.size(-1) / 2);
  return torch::cat({-x2, x1}, -1);
}

}  // namespace

torch::Tensor apply_rope(const torch::Tensor& x, int64_t offset) {
  const int64_t n = x.size(-2), d = x.size(-1);
  auto inv_freq = 1.0 / torch::pow(10000.0, torch::arange(0, d, 2, x.options()) / static_cast<double>(d));
  auto t = torch::arange(offset, offset + n, x.options());
  auto freqs = torch::outer(t, inv_freq);                // (N, d/2)
  auto emb = torch::repeat_interleave(freqs, 2, -1);     // (N, d): f0 f0 f1 f1 ...
  return x * emb.cos() + rotate_half(x) * emb.sin();
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
