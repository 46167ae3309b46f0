// Accepted: FlashAttention-2's loop order: an outer loop over query tiles,
// each keeping its own running state across an inner loop over key tiles;
// causal tiles entirely above the diagonal are skipped.
#include "flash_attention.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

torch::Tensor flash_attention(const torch::Tensor& query, const torch::Tensor& key, const torch::Tensor& value,
                              bool causal, int64_t block_size) {
  const auto Nq = query.size(2), Nk = key.size(2), offset = Nk - Nq;
  const auto scale = 1.0 / std::sqrt(static_cast<double>(query.size(-1)));
  const auto neg_inf = -std::numeric_limits<double>::infinity();
  std::vector<torch::Tensor> tiles;
  for (int64_t qs = 0; qs < Nq; qs += block_size) {
    const auto qn = std::min(block_size, Nq - qs);
    auto q = query.narrow(2, qs, qn);
    auto m = torch::full({query.size(0), query.size(1), qn, 1}, neg_inf, query.options());
    auto l = torch::zeros_like(m);
    auto o = torch::zeros({query.size(0), query.size(1), qn, value.size(-1)}, query.options());
    // The last key this tile's last query may see.
    const auto key_end = causal ? std::min(Nk, qs + qn + offset) : Nk;
    for (int64_t ks = 0; ks < key_end; ks += block_size) {
      const auto kn = std::min(block_size, key_end - ks);
      auto s = torch::matmul(q, key.narrow(2, ks, kn).transpose(-1, -2)) * scale;
      if (causal) {
        auto i = torch::arange(qs, qs + qn, query.options().dtype(torch::kLong)).unsqueeze(-1);
        auto j = torch::arange(ks, ks + kn, query.options().dtype(torch::kLong)).unsqueeze(0);
        s = s.masked_fill(j > i + offset, neg_inf);
      }
      auto m_new = torch::maximum(m, s.amax(-1, true));
      auto p = (s - m_new).exp();
      auto c = (m - m_new).exp();
      l = l * c + p.sum(-1, true);
      o = o * c + p.matmul(value.narrow(2, ks, kn));
      m = m_new;
    }
    tiles.push_back(o / l);
  }
  return torch::cat(tiles, 2);
}
