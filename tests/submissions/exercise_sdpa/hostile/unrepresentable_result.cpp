// Hostile: returns empty tensors with absurd sizes, hoping to crash the grader
// while it reads them back.
#include "sdpa.h"

std::tuple<torch::Tensor, torch::Tensor> scaled_dot_product_attention(
    const torch::Tensor& query, const torch::Tensor& key, const torch::Tensor& value, const torch::Tensor& mask) {
  auto huge = torch::empty({0}, query.options()).as_strided({0, int64_t{1} << 62, int64_t{1} << 62}, {0, 0, 0});
  return {huge, huge};
}
