// Hostile: a correct output, but the attention weights come back with an
// empty key axis, (B, H, Nq, 0): a shape check fails, the grader does not.
#include "sdpa.h"

#include <cmath>

std::tuple<torch::Tensor, torch::Tensor> scaled_dot_product_attention(const torch::Tensor& query,
                                                                       const torch::Tensor& key,
                                                                       const torch::Tensor& value,
                                                                       const torch::Tensor& mask) {
  auto scores = torch::matmul(query, key.transpose(-2, -1)) / std::sqrt(static_cast<double>(query.size(-1)));
  if (mask.defined()) scores = scores.masked_fill(mask == 0, -INFINITY);
  auto weights = torch::softmax(scores, -1);
  return {torch::matmul(weights, value), weights.narrow(-1, 0, 0)};
}
