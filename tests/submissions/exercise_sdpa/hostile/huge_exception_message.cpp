// Hostile: throws an exception whose message is 2 MB on one line; it once
// became a 52 MB text report, repeated for every check.
#include "sdpa.h"

#include <stdexcept>
#include <string>

std::tuple<torch::Tensor, torch::Tensor> scaled_dot_product_attention(
    const torch::Tensor& query, const torch::Tensor& key, const torch::Tensor& value, const torch::Tensor& mask) {
  throw std::runtime_error("no " + std::string(2 << 20, 'A'));
}
