// WRONG: under the causal mask the key loop stops once a block would start at
// or after the newest key (Nk - 1), thinking it lies past every query's
// diagonal; the last query may see that key, its own.
#include "flash_attention.h"

#include <algorithm>
#include <cmath>
#include <limits>

torch::Tensor flash_attention(const torch::Tensor& query, const torch::Tensor& key, const torch::Tensor& value,
                              bool causal, int64_t block_size) {
  const int64_t Nq = query.size(-2), Nk = key.size(-2);
  const double neg = -std::numeric_limits<double>::infinity();
  auto scaled = query * (1.0 / std::sqrt(static_cast<double>(query.size(-1))));
  auto shape = query.sizes().vec();
  shape.back() = 1;
  auto mx = torch::full(shape, neg, query.options());
  auto den = torch::zeros(shape, query.options());
  shape.back() = value.size(-1);
  auto num = torch::zeros(shape, query.options());
  auto last_seen = torch::arange(Nq, query.options().dtype(torch::kLong)).unsqueeze(1) + (Nk - Nq);
  for (int64_t b = 0; b < Nk; b += block_size) {
    if (causal && b >= Nk - 1) break;
    const int64_t e = std::min(Nk, b + block_size);
    auto s = torch::matmul(scaled, key.slice(-2, b, e).transpose(-2, -1));
    if (causal) {
      auto j = torch::arange(b, e, last_seen.options()).unsqueeze(0);
      s = s.masked_fill(j > last_seen, neg);
    }
    auto mx_new = torch::maximum(mx, std::get<0>(s.max(-1, true)));
    auto sub = torch::where(torch::isinf(mx_new), torch::zeros_like(mx_new), mx_new);
    auto w = torch::exp(s - sub);
    auto c = torch::exp(mx - sub);
    den = c * den + w.sum(-1, true);
    num = c * num + torch::matmul(w, value.slice(-2, b, e));
    mx = mx_new;
  }
  return num / den;
}
