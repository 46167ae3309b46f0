// Hostile: throws something that is not a std::exception.
#include "sdpa.h"

std::tuple<torch::Tensor, torch::Tensor> scaled_dot_product_attention(
    const torch::Tensor& query, const torch::Tensor& key, const torch::Tensor& value, const torch::Tensor& mask) {
  throw 42;
}
