// Hostile: records a scope whose name holds a space and a newline, hoping to
// shift the text the operator counts once travelled in, so that the fused
// built-in recorded after it goes unseen. Counts are length-prefixed fields.
#include "sdpa.h"

#include <ATen/ops/_scaled_dot_product_attention.h>
#include <ATen/record_function.h>

std::tuple<torch::Tensor, torch::Tensor> scaled_dot_product_attention(
    const torch::Tensor& query, const torch::Tensor& key, const torch::Tensor& value, const torch::Tensor& mask) {
  { RECORD_FUNCTION("x 1\naten::mm 2\n", std::vector<c10::IValue>()); }
  c10::optional<torch::Tensor> attn_mask;
  if (mask.defined()) attn_mask = mask.to(torch::kBool).expand({query.size(0), query.size(1), query.size(2), key.size(2)});
  return at::_scaled_dot_product_attention(query, key, value, attn_mask, 0.0, /*need_attn_weights=*/true, false);
}
