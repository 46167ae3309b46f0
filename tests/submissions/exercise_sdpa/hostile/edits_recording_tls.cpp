// Hostile: switches the operator recording off by editing LibTorch's
// thread-local recording state directly around the fused built-in, restores
// it, and runs a recorded matmul so that the recording is not empty.
#include "sdpa.h"

#include <ATen/ops/_scaled_dot_product_attention.h>
#include <ATen/record_function.h>

std::tuple<torch::Tensor, torch::Tensor> scaled_dot_product_attention(
    const torch::Tensor& query, const torch::Tensor& key, const torch::Tensor& value, const torch::Tensor& mask) {
  auto saved = at::get_record_function_tls_();
  auto off = saved;
  off.tls_record_function_enabled_ = false;
  at::set_record_function_tls_(off);
  c10::optional<torch::Tensor> attn_mask;
  if (mask.defined()) attn_mask = mask.to(torch::kBool).expand({query.size(0), query.size(1), query.size(2), key.size(2)});
  auto result = at::_scaled_dot_product_attention(query, key, value, attn_mask, 0.0, true, false);
  at::set_record_function_tls_(saved);
  (void)torch::matmul(query, key.transpose(-2, -1));
  return result;
}
