// Hostile: returns the input tensor itself as both results, aliasing the
// caller's value (wrong shapes and values in general). Reading back aliased
// inputs must not confuse the grader: verdict failed.
#include "sdpa.h"

std::tuple<torch::Tensor, torch::Tensor> scaled_dot_product_attention(
    const torch::Tensor& query, const torch::Tensor& key, const torch::Tensor& value, const torch::Tensor& mask) {
  return {value, value};
}
