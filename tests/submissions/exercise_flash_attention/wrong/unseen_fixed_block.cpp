// Wrong (memory): a learner who tuned a block of 64 keys and never reads
// block_size; the output is exact, but the block it keeps does not shrink
// when the caller asks for smaller blocks.
#include "flash_attention.h"

#include <algorithm>
#include <cmath>

torch::Tensor flash_attention(const torch::Tensor& query, const torch::Tensor& key, const torch::Tensor& value,
                              bool causal, int64_t /*block_size*/) {
  constexpr int64_t kBlock = 64;
  const int64_t Nq = query.size(2), Nk = key.size(2);
  const double scale = 1.0 / std::sqrt(static_cast<double>(query.size(-1)));
  auto m = torch::full({query.size(0), query.size(1), Nq, 1}, -INFINITY, query.options());
  auto l = torch::zeros_like(m);
  auto acc = torch::zeros({query.size(0), query.size(1), Nq, value.size(-1)}, query.options());
  auto rows = torch::arange(Nq, query.options().dtype(torch::kLong)).unsqueeze(1) + (Nk - Nq);
  for (int64_t j0 = 0; j0 < Nk; j0 += kBlock) {
    const int64_t j1 = std::min(Nk, j0 + kBlock);
    auto s = query.matmul(key.slice(2, j0, j1).transpose(-2, -1)) * scale;
    if (causal) {
      auto cols = torch::arange(j0, j1, rows.options()).unsqueeze(0);
      s = s.masked_fill(cols > rows, -INFINITY);
    }
    auto m_new = torch::maximum(m, std::get<0>(s.max(-1, true)));
    auto safe = m_new.masked_fill(torch::isinf(m_new), 0.0);
    auto p = torch::exp(s - safe);
    auto correction = torch::exp(m - safe);
    l = l * correction + p.sum(-1, true);
    acc = acc * correction + p.matmul(value.slice(2, j0, j1));
    m = m_new;
  }
  return acc / l;
}
