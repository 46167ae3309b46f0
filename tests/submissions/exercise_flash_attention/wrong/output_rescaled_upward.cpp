// WRONG: the running sum is rescaled correctly, but the accumulated output is
// multiplied by exp(m_new - m_old) when the max grows, the inverse factor.
#include "flash_attention.h"

#include <algorithm>
#include <cmath>
#include <limits>

torch::Tensor flash_attention(const torch::Tensor& query, const torch::Tensor& key, const torch::Tensor& value,
                              bool causal, int64_t block_size) {
  const int64_t B = query.size(0), H = query.size(1), Nq = query.size(2), Nk = key.size(2), dv = value.size(3);
  const double ninf = -std::numeric_limits<double>::infinity();
  auto q = query / std::sqrt(static_cast<double>(query.size(3)));
  auto m_old = torch::full({B, H, Nq, 1}, ninf, query.options());
  auto denom = torch::zeros({B, H, Nq, 1}, query.options());
  auto numer = torch::zeros({B, H, Nq, dv}, query.options());
  auto qpos = torch::arange(Nk - Nq, Nk, query.options().dtype(torch::kLong)).view({Nq, 1});
  for (int64_t k0 = 0; k0 < Nk; k0 += block_size) {
    const int64_t k1 = std::min(Nk, k0 + block_size);
    auto sc = torch::matmul(q, key.slice(2, k0, k1).transpose(2, 3));
    if (causal) {
      auto kpos = torch::arange(k0, k1, qpos.options()).view({1, k1 - k0});
      sc = sc.masked_fill(kpos > qpos, ninf);
    }
    auto m_new = torch::maximum(m_old, std::get<0>(sc.max(3, true)));
    // Rows that have seen no visible key yet keep a max of -inf: subtract 0 there.
    auto base = torch::where(torch::isneginf(m_new), torch::zeros_like(m_new), m_new);
    auto p = torch::exp(sc - base);
    auto down = torch::exp(m_old - base);                                  // exp(m - m')
    auto up = torch::where(torch::isneginf(m_old), torch::ones_like(m_old), torch::exp(base - m_old));
    denom = denom * down + p.sum(3, true);
    numer = numer * up + torch::matmul(p, value.slice(2, k0, k1));
    m_old = m_new;
  }
  return numer / denom;
}
