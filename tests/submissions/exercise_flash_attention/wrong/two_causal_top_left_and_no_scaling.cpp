// WRONG twice: the causal mask compares key j with query i directly (as if the
// queries were the first Nq tokens, not the last), and the scores are never scaled.
#include "flash_attention.h"

#include <cmath>

torch::Tensor flash_attention(const torch::Tensor& query, const torch::Tensor& key, const torch::Tensor& value,
                              bool causal, int64_t block_size) {
  const int64_t B = query.size(0), H = query.size(1), Nq = query.size(2), Nk = key.size(2);
  const double scale = 1.0 / std::sqrt((double)query.size(3));
  auto row_max = torch::full({B, H, Nq, 1}, -INFINITY, query.options());
  auto row_sum = torch::zeros({B, H, Nq, 1}, query.options());
  auto out = torch::zeros({B, H, Nq, value.size(3)}, query.options());
  auto qpos = torch::arange(Nq, query.options().dtype(torch::kLong)).view({Nq, 1});
  for (int64_t start = 0; start < Nk; start += block_size) {
    const int64_t end = std::min(start + block_size, Nk);
    auto kb = key.slice(2, start, end);
    auto vb = value.slice(2, start, end);
    auto s = torch::matmul(query, kb.transpose(2, 3));
    if (causal) {
      auto kpos = torch::arange(start, end, qpos.options()).view({1, end - start});
      s = s.masked_fill(kpos > qpos, -INFINITY);
    }
    auto new_max = torch::max(row_max, std::get<0>(s.max(3, true)));
    auto p = torch::exp(s - new_max);
    auto alpha = torch::exp(row_max - new_max);
    row_sum = alpha * row_sum + p.sum(3, true);
    out = alpha * out + torch::matmul(p, vb);
    row_max = new_max;
  }
  return out / row_sum;
}
