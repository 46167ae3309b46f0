// Hostile: an LTO symbol-table section listing one harmless name: nm then
// lists that section instead of the real symbols, which hides the fused
// built-in this submission calls (and the recording switch it flips).
#include "sdpa.h"

#include <ATen/ops/_scaled_dot_product_attention.h>

__asm__(".section .gnu.lto_.symtab.0,\"\",@progbits\n.ascii \"harmless\"\n.byte 0\n.previous\n");

std::tuple<torch::Tensor, torch::Tensor> scaled_dot_product_attention(
    const torch::Tensor& query, const torch::Tensor& key, const torch::Tensor& value, const torch::Tensor& mask) {
  c10::optional<torch::Tensor> attn_mask;
  if (mask.defined()) attn_mask = mask.to(torch::kBool).expand({query.size(0), query.size(1), query.size(2), key.size(2)});
  return at::_scaled_dot_product_attention(query, key, value, attn_mask, 0.0, true, false);
}
