// Broken: a typo the compiler must report in the learner's own words.
#include "sdpa.h"

std::tuple<torch::Tensor, torch::Tensor> scaled_dot_product_attention(
    const torch::Tensor& query, const torch::Tensor& key, const torch::Tensor& value, const torch::Tensor& mask) {
  auto scores = torch::matmul(query, key.transpose(-2, -1)
  return {scores, scores};
}
