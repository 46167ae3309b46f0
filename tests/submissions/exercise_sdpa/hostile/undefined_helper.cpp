// Broken: declares a helper it never defines (a link error, reported as a compile error).
#include "sdpa.h"

torch::Tensor scale_scores(const torch::Tensor& scores, int64_t d_k);

std::tuple<torch::Tensor, torch::Tensor> scaled_dot_product_attention(
    const torch::Tensor& query, const torch::Tensor& key, const torch::Tensor& value, const torch::Tensor& mask) {
  auto weights = torch::softmax(scale_scores(torch::matmul(query, key.transpose(-2, -1)), query.size(-1)), -1);
  return {torch::matmul(weights, value), weights};
}
