// Accepted: FlashAttention-1's bookkeeping: the running output is kept
// normalised (divided by the running sum) after every block, and each block
// re-weights it by l_old * exp(m_old - m_new) / l_new. Blocks hidden
// entirely from a row by the causal mask are guarded against NaN.
#include "flash_attention.h"

#include <cmath>

using torch::Tensor;

Tensor flash_attention(const Tensor& query, const Tensor& key, const Tensor& value, bool causal,
                       int64_t block_size) {
  TORCH_CHECK(block_size >= 1, "block_size must be >= 1");
  const auto nq = query.size(-2), nk = key.size(-2);
  auto q = query / std::sqrt(static_cast<double>(query.size(-1)));  // scale once, up front
  auto stats = query.new_zeros({query.size(0), query.size(1), nq, 1});
  auto m = stats - INFINITY;
  auto l = stats.clone();
  auto o = query.new_zeros({query.size(0), query.size(1), nq, value.size(-1)});
  auto rows = torch::arange(nq, query.options().dtype(torch::kLong)).unsqueeze(1);
  for (int64_t j0 = 0; j0 < nk; j0 += block_size) {
    const auto j1 = std::min(nk, j0 + block_size);
    auto s = torch::einsum("bhid,bhjd->bhij", {q, key.slice(-2, j0, j1)});
    if (causal) {
      auto cols = torch::arange(j0, j1, rows.options()).unsqueeze(0);
      s = s.masked_fill(cols - rows > nk - nq, -INFINITY);
    }
    // A block whose keys are all hidden from a row has max -inf: use 0 there,
    // so exp(-inf - 0) = 0 instead of exp(-inf - (-inf)) = NaN.
    auto m_block = std::get<0>(s.max(-1, true));
    m_block = torch::where(torch::isinf(m_block), torch::zeros_like(m_block), m_block);
    auto p = torch::exp(s - m_block);
    auto l_block = p.sum(-1, true);
    auto m_new = torch::maximum(m, m_block);
    auto l_new = torch::exp(m - m_new) * l + torch::exp(m_block - m_new) * l_block;
    o = (l * torch::exp(m - m_new) * o + torch::exp(m_block - m_new) * torch::matmul(p, value.slice(-2, j0, j1))) / l_new;
    m = m_new;
    l = l_new;
  }
  return o;
}
