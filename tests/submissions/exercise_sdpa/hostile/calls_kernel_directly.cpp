// Hostile: calls the fused attention's implementation function in at::native
// directly, past the dispatcher, so the operator recording never sees it.
#include "sdpa.h"

#include <ATen/ops/_scaled_dot_product_attention_math_native.h>

std::tuple<torch::Tensor, torch::Tensor> scaled_dot_product_attention(
    const torch::Tensor& query, const torch::Tensor& key, const torch::Tensor& value, const torch::Tensor& mask) {
  c10::optional<torch::Tensor> attn_mask;
  if (mask.defined()) attn_mask = mask.to(torch::kBool).expand({query.size(0), query.size(1), query.size(2), key.size(2)});
  return at::native::_scaled_dot_product_attention_math(query, key, value, attn_mask, 0.0, true, false);
}
