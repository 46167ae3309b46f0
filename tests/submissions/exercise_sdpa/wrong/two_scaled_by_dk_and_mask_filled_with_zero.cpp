// Two independent mistakes: the scores divided by d_k instead of sqrt(d_k),
// and the masked scores set to 0 instead of -inf (masked keys keep weight).
#include "sdpa.h"

std::tuple<torch::Tensor, torch::Tensor> scaled_dot_product_attention(
    const torch::Tensor& query, const torch::Tensor& key, const torch::Tensor& value,
    const torch::Tensor& mask) {
  auto scores = torch::matmul(query, key.transpose(-2, -1)) / static_cast<double>(query.size(-1));
  if (mask.defined()) scores = scores.masked_fill(mask == 0, 0.0);
  auto weights = torch::softmax(scores, -1);
  return {torch::matmul(weights, value), weights};
}
