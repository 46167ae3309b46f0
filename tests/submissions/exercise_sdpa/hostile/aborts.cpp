// Hostile: a failed assertion aborts the process.
#include "sdpa.h"

#include <cstdlib>

std::tuple<torch::Tensor, torch::Tensor> scaled_dot_product_attention(
    const torch::Tensor& query, const torch::Tensor& key, const torch::Tensor& value, const torch::Tensor& mask) {
  std::abort();
}
