// Forbidden: the rotation is written by hand, but the attention is handed to
// LibTorch's fused scaled dot-product attention (the private 1.13 op that
// also returns the weights; in 2.x the public one, the weights recomputed).
#include "rope.h"

#include <torch/version.h>

#include <cmath>

#if TORCH_VERSION_MAJOR >= 2
#include <ATen/ops/scaled_dot_product_attention.h>
#else
#include <ATen/ops/_scaled_dot_product_attention.h>
#endif

torch::Tensor apply_rope(const torch::Tensor& x, int64_t offset) {
  const int64_t n = x.size(-2), d = x.size(-1), half = d / 2;
  auto theta = torch::pow(10000.0, torch::arange(0, d, 2, x.options()) * (-1.0 / d));
  auto angles = torch::outer(torch::arange(offset, offset + n, x.options()), theta);
  auto cos = angles.cos(), sin = angles.sin();
  auto x1 = x.slice(-1, 0, half), x2 = x.slice(-1, half, d);
  return torch::cat({x1 * cos - x2 * sin, x2 * cos + x1 * sin}, -1);
}

std::tuple<torch::Tensor, torch::Tensor> rope_attention(const torch::Tensor& query, const torch::Tensor& key,
                                                        const torch::Tensor& value, int64_t query_offset,
                                                        int64_t key_offset) {
  auto q = apply_rope(query, query_offset);
  auto k = apply_rope(key, key_offset);
#if TORCH_VERSION_MAJOR >= 2
  auto output = at::scaled_dot_product_attention(q, k, value);
  auto weights = torch::softmax(torch::matmul(q, k.transpose(-2, -1)) / std::sqrt(static_cast<double>(q.size(-1))), -1);
  return {output, weights};
#else
  return at::_scaled_dot_product_attention(q, k, value, c10::nullopt, 0.0, /*need_attn_weights=*/true,
                                           /*is_causal=*/false);
#endif
}
