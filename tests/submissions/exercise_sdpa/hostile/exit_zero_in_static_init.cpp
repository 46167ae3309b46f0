// Hostile: std::exit(0) from a global initializer, as soon as the library is
// loaded and before any check runs. An early exit with status 0 and no results
// is a runtime error.
#include "sdpa.h"

#include <cstdlib>

namespace {
const int leave = (std::exit(0), 0);
}

std::tuple<torch::Tensor, torch::Tensor> scaled_dot_product_attention(
    const torch::Tensor& query, const torch::Tensor& key, const torch::Tensor& value, const torch::Tensor& mask) {
  return {value, key};
}
