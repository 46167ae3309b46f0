// Hostile: dereferences a null pointer on the first call.
#include "sdpa.h"

std::tuple<torch::Tensor, torch::Tensor> scaled_dot_product_attention(
    const torch::Tensor& query, const torch::Tensor& key, const torch::Tensor& value, const torch::Tensor& mask) {
  volatile int* nowhere = nullptr;
  *nowhere = 42;
  return {query, key};
}
