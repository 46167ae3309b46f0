// Hostile: leaves with status 0 as soon as the library is loaded, before any check runs.
#include "sdpa.h"

#include <cstdlib>

namespace {
const int leave = (std::quick_exit(0), 0);
}

std::tuple<torch::Tensor, torch::Tensor> scaled_dot_product_attention(
    const torch::Tensor& query, const torch::Tensor& key, const torch::Tensor& value, const torch::Tensor& mask) {
  return {value, key};
}
