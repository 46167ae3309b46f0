// Hostile: computes correct results, then its exit handler calls exit(3)
// once the process ends: the process ends with status 3, which is no clean end.
#include "sdpa.h"

#include <cmath>
#include <cstdlib>
#include <limits>

namespace {
void exit_again() { std::exit(3); }
const int registered = std::atexit(exit_again);
}  // namespace

std::tuple<torch::Tensor, torch::Tensor> scaled_dot_product_attention(
    const torch::Tensor& query, const torch::Tensor& key, const torch::Tensor& value, const torch::Tensor& mask) {
  (void)registered;
  auto scores = torch::matmul(query, key.transpose(-2, -1)) / std::sqrt(static_cast<double>(query.size(-1)));
  if (mask.defined()) scores = scores.masked_fill(mask == 0, -std::numeric_limits<double>::infinity());
  auto weights = torch::softmax(scores, -1);
  return {torch::matmul(weights, value), weights};
}
