// Hostile: never returns.
#include "sdpa.h"

std::tuple<torch::Tensor, torch::Tensor> scaled_dot_product_attention(
    const torch::Tensor& query, const torch::Tensor& key, const torch::Tensor& value, const torch::Tensor& mask) {
  volatile unsigned long spin = 0;
  while (true) ++spin;
}
