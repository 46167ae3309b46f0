// Hostile: reseeds LibTorch's random generator at every call (as if to make the
// "random" inputs predictable) and returns unscaled scores. The inputs come from
// the parent, seeded there, so reseeding the child changes nothing: wrong
// numbers, verdict failed.
#include "sdpa.h"

#include <limits>

std::tuple<torch::Tensor, torch::Tensor> scaled_dot_product_attention(
    const torch::Tensor& query, const torch::Tensor& key, const torch::Tensor& value, const torch::Tensor& mask) {
  torch::manual_seed(0);
  auto scores = torch::matmul(query, key.transpose(-2, -1));  // no 1/sqrt(d_k)
  if (mask.defined()) scores = scores.masked_fill(mask == 0, -std::numeric_limits<double>::infinity());
  auto weights = torch::softmax(scores, -1);
  return {torch::matmul(weights, value), weights};
}
