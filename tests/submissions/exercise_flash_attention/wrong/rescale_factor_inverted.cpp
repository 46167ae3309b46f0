// WRONG: one rescale factor for the running sum and the output, but written
// exp(m_new - m_old) (it grows with the max) instead of exp(m_old - m_new).
#include "flash_attention.h"

#include <algorithm>
#include <cmath>
#include <limits>

torch::Tensor flash_attention(const torch::Tensor& query, const torch::Tensor& key, const torch::Tensor& value,
                              bool causal, int64_t block_size) {
  const int64_t Nq = query.size(2), Nk = key.size(2);
  const double inf = std::numeric_limits<double>::infinity();
  const double c = 1.0 / std::sqrt(static_cast<double>(query.size(3)));
  auto m = torch::full({query.size(0), query.size(1), Nq, 1}, -inf, query.options());
  auto l = torch::zeros_like(m);
  auto o = torch::zeros({query.size(0), query.size(1), Nq, value.size(3)}, query.options());
  auto diag = torch::arange(Nk - Nq, Nk, query.options().dtype(torch::kLong)).unsqueeze(1);
  for (int64_t j0 = 0; j0 < Nk; j0 += block_size) {
    const int64_t nj = std::min(block_size, Nk - j0);
    auto s = c * torch::matmul(query, key.narrow(2, j0, nj).transpose(2, 3));
    if (causal) s.masked_fill_(torch::arange(j0, j0 + nj, diag.options()).unsqueeze(0) > diag, -inf);
    auto m2 = torch::max(m, std::get<0>(torch::max(s, 3, true)));
    auto m2z = torch::where(torch::isfinite(m2), m2, torch::zeros_like(m2));
    auto p = torch::exp(s - m2z);
    // Nothing accumulated yet (m = -inf): factor 1.
    auto f = torch::where(torch::isfinite(m), torch::exp(m2z - m), torch::ones_like(m));
    l = f * l + p.sum(3, true);
    o = f * o + torch::matmul(p, value.narrow(2, j0, nj));
    m = m2;
  }
  return o / l;
}
