// Wrong (online_softmax): each block's exponentials are taken against that
// block's own max, and the running state is moved onto it, so the reference
// can fall as well as rise. Exact in exact arithmetic, but when a later block's
// scores are far below an earlier one's, exp(m_old - m_block) overflows.
#include "flash_attention.h"

#include <algorithm>
#include <cmath>

torch::Tensor flash_attention(const torch::Tensor& query, const torch::Tensor& key, const torch::Tensor& value,
                              bool causal, int64_t block_size) {
  const int64_t Nq = query.size(2), Nk = key.size(2);
  const double scale = 1.0 / std::sqrt(static_cast<double>(query.size(-1)));
  torch::Tensor m, l, acc;
  auto rows = torch::arange(Nq, query.options().dtype(torch::kLong)).unsqueeze(1) + (Nk - Nq);
  for (int64_t j0 = 0; j0 < Nk; j0 += block_size) {
    const int64_t j1 = std::min(Nk, j0 + block_size);
    auto s = query.matmul(key.slice(2, j0, j1).transpose(-2, -1)) * scale;
    if (causal) {
      auto cols = torch::arange(j0, j1, rows.options()).unsqueeze(0);
      s = s.masked_fill(cols > rows, -INFINITY);
    }
    auto block_max = std::get<0>(s.max(-1, true));
    block_max = block_max.masked_fill(torch::isinf(block_max), 0.0);
    auto p = torch::exp(s - block_max);
    auto pv = p.matmul(value.slice(2, j0, j1));
    if (!m.defined()) {
      m = block_max;
      l = p.sum(-1, true);
      acc = pv;
      continue;
    }
    auto move = torch::exp(m - block_max);
    l = l * move + p.sum(-1, true);
    acc = acc * move + pv;
    m = block_max;
  }
  return acc / l;
}
