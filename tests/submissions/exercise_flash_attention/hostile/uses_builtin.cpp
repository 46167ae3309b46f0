// Forbidden: hands the whole computation to LibTorch's fused attention (the
// private 1.13 op; in 2.x the public one, which picks a flash kernel itself).
#include "flash_attention.h"

#include <torch/version.h>

#if TORCH_VERSION_MAJOR >= 2
#include <ATen/ops/scaled_dot_product_attention.h>
#else
#include <ATen/ops/_scaled_dot_product_attention.h>
#endif

torch::Tensor flash_attention(const torch::Tensor& query, const torch::Tensor& key, const torch::Tensor& value,
                              bool causal, int64_t block_size) {
  (void)block_size;
  c10::optional<at::Tensor> mask;
  if (causal) {
    const auto Nq = query.size(2), Nk = key.size(2);
    mask = torch::ones({Nq, Nk}, query.options().dtype(torch::kBool)).tril(Nk - Nq);
  }
#if TORCH_VERSION_MAJOR >= 2
  return at::scaled_dot_product_attention(query, key, value, mask);
#else
  return std::get<0>(at::_scaled_dot_product_attention(query, key, value, mask, 0.0, false, false));
#endif
}
