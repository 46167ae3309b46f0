// WRONG (outside the known mistakes): written for a (batch, seq, heads, dim)
// layout, Hugging Face style: the sequence length is taken as x.size(1) and
// the cos/sin tables are shaped (1, seq, 1, dim). On this interface's
// (B, H, N, d) that is the head axis: every token of head h is turned as
// position offset + h. A single token of a single head (the only shape where
// the two layouts agree) comes out right.
#include "rope.h"

#include <cmath>

namespace {
torch::Tensor rotate_half(const torch::Tensor& x) {
  auto halves = x.chunk(2, -1);
  return torch::cat({-halves[1], halves[0]}, -1);
}
}  // namespace

torch::Tensor apply_rope(const torch::Tensor& x, int64_t offset) {
  const int64_t seq_len = x.size(1), dim = x.size(3);
  auto options = x.options();
  auto inv_freq = torch::pow(10000.0, -torch::arange(0, dim, 2, options) / static_cast<double>(dim));
  auto t = torch::arange(offset, offset + seq_len, options);
  auto freqs = torch::outer(t, inv_freq);
  auto emb = torch::cat({freqs, freqs}, -1).view({1, seq_len, 1, dim});
  return x * emb.cos() + rotate_half(x) * emb.sin();
}

std::tuple<torch::Tensor, torch::Tensor> rope_attention(const torch::Tensor& query, const torch::Tensor& key,
                                                        const torch::Tensor& value, int64_t query_offset,
                                                        int64_t key_offset) {
  auto q = apply_rope(query, query_offset), k = apply_rope(key, key_offset);
  auto weights = torch::softmax(q.matmul(k.transpose(-1, -2)) / std::sqrt(static_cast<double>(q.size(-1))), -1);
  return {weights.matmul(value), weights};
}
