// WRONG: when a block raises the running max from m to m', the running sum is
// multiplied by exp(m' - m) (the inverse of the factor the output gets); the
// first block is handled on its own, so no -inf enters the factors.
#include "flash_attention.h"

#include <algorithm>
#include <cmath>
#include <limits>

torch::Tensor flash_attention(const torch::Tensor& query, const torch::Tensor& key, const torch::Tensor& value,
                              bool causal, int64_t block_size) {
  const int64_t Nq = query.size(-2), Nk = key.size(-2), shift = Nk - Nq;
  const double inv_sqrt_d = 1.0 / std::sqrt(static_cast<double>(query.size(-1)));
  const auto positions = query.options().dtype(torch::kLong);
  auto scores_of = [&](int64_t from, int64_t to) {
    auto s = torch::matmul(query, key.slice(-2, from, to).transpose(-1, -2)) * inv_sqrt_d;
    if (causal) {
      auto rows = torch::arange(Nq, positions).unsqueeze(-1) + shift;
      auto cols = torch::arange(from, to, positions).unsqueeze(0);
      s = s.masked_fill(cols > rows, -std::numeric_limits<double>::infinity());
    }
    return s;
  };
  // Key 0 is visible to every query (i + Nk - Nq >= 0): the first block gives a finite max.
  int64_t to = std::min(block_size, Nk);
  auto s = scores_of(0, to);
  auto run_max = std::get<0>(s.max(-1, /*keepdim=*/true));
  auto e = (s - run_max).exp();
  auto run_sum = e.sum(-1, true);
  auto acc = e.matmul(value.slice(-2, 0, to));
  for (int64_t from = to; from < Nk; from = to) {
    to = std::min(from + block_size, Nk);
    s = scores_of(from, to);
    auto grown = torch::maximum(run_max, std::get<0>(s.max(-1, true)));
    e = (s - grown).exp();
    acc = acc * (run_max - grown).exp() + e.matmul(value.slice(-2, from, to));
    run_sum = run_sum * (grown - run_max).exp() + e.sum(-1, true);
    run_max = grown;
  }
  return acc / run_sum;
}
