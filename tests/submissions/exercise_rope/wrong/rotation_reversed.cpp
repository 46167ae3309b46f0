// Wrong: rotate_half returns cat(x2, -x1) instead of cat(-x2, x1), so every
// pair turns clockwise (each angle negated).
#include "rope.h"

#include <cmath>

namespace {

torch::Tensor rotate_half(const torch::Tensor& x) {
  const int64_t half = x.size(-1) / 2;
  auto x1 = x.slice(-1, 0, half);
  auto x2 = x.slice(-1, half);
  return torch::cat({x2, -x1}, -1);
}

}  // namespace

torch::Tensor apply_rope(const torch::Tensor& x, int64_t offset) {
  const int64_t seq_len = x.size(-2), dim = x.size(-1);
  auto inv_freq = 1.0 / torch::pow(10000.0, torch::arange(0, dim, 2, x.options()) / static_cast<double>(dim));
  auto t = torch::arange(offset, offset + seq_len, x.options());
  auto freqs = torch::outer(t, inv_freq);
  auto emb = torch::cat({freqs, freqs}, -1);  // (seq_len, dim)
  return x * emb.cos() + rotate_half(x) * emb.sin();
}

std::tuple<torch::Tensor, torch::Tensor> rope_attention(const torch::Tensor& query, const torch::Tensor& key,
                                                        const torch::Tensor& value, int64_t query_offset,
                                                        int64_t key_offset) {
  auto q = apply_rope(query, query_offset);
  auto k = apply_rope(key, key_offset);
  auto attn = torch::softmax(torch::matmul(q, k.transpose(-2, -1)) / std::sqrt(static_cast<double>(query.size(-1))), -1);
  return {torch::matmul(attn, value), attn};
}
