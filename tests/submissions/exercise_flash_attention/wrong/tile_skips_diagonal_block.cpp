// WRONG: query tiles of block_size rows; under the causal mask a key block is
// skipped when it starts at or after the last key the tile may see (>= where
// > belongs), so a block that starts exactly on that key is never visited:
// the tile's last query loses its own key.
#include "flash_attention.h"

#include <algorithm>
#include <cmath>
#include <limits>

torch::Tensor flash_attention(const torch::Tensor& query, const torch::Tensor& key, const torch::Tensor& value,
                              bool causal, int64_t block_size) {
  const int64_t Nq = query.size(2), Nk = key.size(2), shift = Nk - Nq;
  const double scale = 1.0 / std::sqrt(static_cast<double>(query.size(3)));
  const double ninf = -std::numeric_limits<double>::infinity();
  const auto longs = query.options().dtype(torch::kLong);
  std::vector<torch::Tensor> tiles;
  for (int64_t q0 = 0; q0 < Nq; q0 += block_size) {
    const int64_t qn = std::min(block_size, Nq - q0);
    auto q = query.narrow(2, q0, qn) * scale;
    const int64_t tile_last = q0 + qn - 1 + shift;  // the last key the tile's last query sees
    auto row = torch::arange(q0 + shift, q0 + shift + qn, longs).unsqueeze(1);
    auto m = torch::full({q.size(0), q.size(1), qn, 1}, ninf, q.options());
    auto l = torch::zeros_like(m);
    auto acc = torch::zeros({q.size(0), q.size(1), qn, value.size(3)}, q.options());
    for (int64_t k0 = 0; k0 < Nk; k0 += block_size) {
      if (causal && k0 >= tile_last) continue;
      const int64_t kn = std::min(block_size, Nk - k0);
      auto s = torch::matmul(q, key.narrow(2, k0, kn).transpose(2, 3));
      if (causal) s = s.masked_fill(torch::arange(k0, k0 + kn, longs).unsqueeze(0) > row, ninf);
      auto m_new = torch::maximum(m, std::get<0>(s.max(-1, true)));
      auto safe = torch::where(torch::isinf(m_new), torch::zeros_like(m_new), m_new);
      auto p = torch::exp(s - safe);
      auto a = torch::exp(m - safe);
      l = l * a + p.sum(-1, true);
      acc = acc * a + torch::matmul(p, value.narrow(2, k0, kn));
      m = m_new;
    }
    tiles.push_back(acc / l);
  }
  return torch::cat(tiles, 2);
}
