#include "flash_attention.h"

#include <ATen/ATen.h>

#include <cmath>
#include <limits>

namespace reference {
namespace {

double scale_of(const at::Tensor& query, const FlashVariant& variant) {
  return variant.scale ? *variant.scale : 1.0 / std::sqrt(static_cast<double>(query.size(-1)));
}

// True where query i may not see key j (keys key_begin .. key_begin + count - 1).
at::Tensor hidden(int64_t nq, int64_t nk, int64_t key_begin, int64_t count, const FlashVariant& variant,
                  const at::TensorOptions& options) {
  const int64_t shift = variant.causal_top_left ? 0 : nk - nq;
  auto i = at::arange(nq, options.dtype(at::kLong)).unsqueeze(1);
  auto j = at::arange(key_begin, key_begin + count, options.dtype(at::kLong)).unsqueeze(0);
  return j > i + shift;
}

}  // namespace

at::Tensor flash_reference(const at::Tensor& query, const at::Tensor& key, const at::Tensor& value, bool causal,
                           int64_t block_size, const FlashVariant& variant) {
  TORCH_CHECK(query.dim() == 4 && key.dim() == 4 && value.dim() == 4, "reference flash attention expects 4-d inputs");
  const auto nq = query.size(2), nk = key.size(2);
  TORCH_CHECK(!causal || nq <= nk, "causal attention needs Nq <= Nk, got Nq = ", nq, ", Nk = ", nk);
  if (variant.blockwise()) return online_softmax_attention(query, key, value, causal, block_size, variant);
  auto scores = at::matmul(query, key.transpose(-2, -1)) * scale_of(query, variant);
  if (causal && !variant.causal_ignored) {
    scores = scores.masked_fill(hidden(nq, nk, 0, nk, variant, query.options()),
                                -std::numeric_limits<double>::infinity());
  }
  return at::matmul(at::softmax(scores, -1), value);
}

at::Tensor online_softmax_attention(const at::Tensor& query, const at::Tensor& key, const at::Tensor& value,
                                    bool causal, int64_t block_size, const FlashVariant& variant) {
  TORCH_CHECK(block_size > 0, "block_size must be positive");
  const auto nq = query.size(2), nk = key.size(2);
  auto sizes = query.sizes().vec();
  sizes.back() = 1;
  auto running_max = at::full(sizes, -std::numeric_limits<double>::infinity(), query.options());
  auto running_sum = at::zeros(sizes, query.options());
  sizes.back() = value.size(-1);
  auto accumulator = at::zeros(sizes, query.options());
  const double scale = scale_of(query, variant);
  for (int64_t begin = 0; begin < nk; begin += block_size) {
    const auto count = std::min(block_size, nk - begin);
    if (variant.last_block_dropped && count < block_size) break;
    auto scores = at::matmul(query, key.narrow(2, begin, count).transpose(-2, -1)) * scale;
    if (causal && !variant.causal_ignored) {
      scores = scores.masked_fill(hidden(nq, nk, begin, count, variant, query.options()),
                                  -std::numeric_limits<double>::infinity());
    }
    auto new_max = at::maximum(running_max, std::get<0>(scores.max(-1, /*keepdim=*/true)));
    // Rows that have seen no visible key yet keep a max of -inf: their
    // correction is 1 (nothing to correct) and their weights 0.
    auto finite = at::isfinite(new_max);
    auto safe_max = at::where(finite, new_max, at::zeros_like(new_max));
    auto weights = at::exp(scores - safe_max);
    auto correction = at::where(finite, at::exp(running_max - safe_max), at::ones_like(new_max));
    // The mistaken factor exp(m' - m): 1 where nothing was summed yet (m = -inf).
    auto inverted = at::where(at::isfinite(running_max), at::exp(safe_max - running_max), at::ones_like(new_max));
    const auto& sum_factor = variant.inverted_sum_correction ? inverted : correction;
    const auto& accumulator_factor = variant.inverted_accumulator_correction ? inverted : correction;
    running_sum = (variant.stale_sum ? running_sum : running_sum * sum_factor) + weights.sum(-1, true);
    accumulator = (variant.stale_accumulator ? accumulator : accumulator * accumulator_factor) +
                  at::matmul(weights, value.narrow(2, begin, count));
    running_max = new_max;
  }
  return accumulator / running_sum;
}

}  // namespace reference
