// WRONG: the scores are divided by sqrt of the value width (value.size(-1))
// instead of sqrt of the query/key width d.
#include "flash_attention.h"

#include <algorithm>
#include <cmath>
#include <limits>

torch::Tensor flash_attention(const torch::Tensor& query, const torch::Tensor& key, const torch::Tensor& value,
                              bool causal, int64_t block_size) {
  const int64_t Nq = query.size(2), Nk = key.size(2), width = value.size(3);
  const double root = std::sqrt(static_cast<double>(width));
  auto stats = query.sizes().vec();
  stats.back() = 1;
  auto best = torch::full(stats, -std::numeric_limits<double>::infinity(), query.options());
  auto total = torch::zeros(stats, query.options());
  auto out = torch::zeros({query.size(0), query.size(1), Nq, width}, query.options());
  auto row = torch::arange(Nq, query.options().dtype(torch::kLong)).unsqueeze(1) + (Nk - Nq);
  for (int64_t lo = 0; lo < Nk; lo += block_size) {
    const int64_t n = std::min(block_size, Nk - lo);
    auto s = torch::matmul(query, key.narrow(2, lo, n).transpose(2, 3)) / root;
    if (causal) {
      auto col = torch::arange(lo, lo + n, row.options()).unsqueeze(0);
      s = s.masked_fill(col > row, -std::numeric_limits<double>::infinity());
    }
    auto top = torch::maximum(best, std::get<0>(s.max(-1, true)));
    auto ref = torch::nan_to_num(top, 0.0, 0.0, 0.0);  // -inf -> 0 for rows with nothing visible yet
    auto w = torch::exp(s - ref);
    auto fix = torch::exp(best - ref);
    total = total * fix + w.sum(-1, true);
    out = out * fix + torch::matmul(w, value.narrow(2, lo, n));
    best = top;
  }
  return out / total;
}
