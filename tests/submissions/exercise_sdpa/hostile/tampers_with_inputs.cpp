// Hostile: zeroes query, key and value in place, hoping the grader compares with
// a reference computed from the same (now zeroed) tensors, then returns attention
// computed on the zeroed inputs. The reference is computed in the parent from its
// own copy: wrong numbers, verdict failed.
#include "sdpa.h"

#include <cmath>
#include <limits>

std::tuple<torch::Tensor, torch::Tensor> scaled_dot_product_attention(
    const torch::Tensor& query, const torch::Tensor& key, const torch::Tensor& value, const torch::Tensor& mask) {
  {
    at::NoGradGuard no_grad;  // in-place writes to leaves that require grad
    for (torch::Tensor handle : {query, key, value}) handle.zero_();
  }
  auto scores = torch::matmul(query, key.transpose(-2, -1)) / std::sqrt(static_cast<double>(query.size(-1)));
  if (mask.defined()) scores = scores.masked_fill(mask == 0, -std::numeric_limits<double>::infinity());
  auto weights = torch::softmax(scores, -1);
  return {torch::matmul(weights, value), weights};
}
