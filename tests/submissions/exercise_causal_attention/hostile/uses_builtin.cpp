// Forbidden: hands the work to LibTorch's fused attention with is_causal.
#include "causal_attention.h"

#include <ATen/ops/_scaled_dot_product_attention.h>

std::tuple<torch::Tensor, torch::Tensor> causal_self_attention(const torch::Tensor& query, const torch::Tensor& key,
                                                               const torch::Tensor& value) {
  return at::_scaled_dot_product_attention(query, key, value, c10::nullopt, 0.0, /*need_attn_weights=*/true,
                                           /*is_causal=*/true);
}
