// Hostile: writes an endless stream of text to stdout. The output cap stops it:
// verdict output_limit.
#include "sdpa.h"

#include <cstdio>

std::tuple<torch::Tensor, torch::Tensor> scaled_dot_product_attention(
    const torch::Tensor& query, const torch::Tensor& key, const torch::Tensor& value, const torch::Tensor& mask) {
  for (unsigned long line = 0;; ++line) {
    std::printf("%lu all work and no play makes attention a dull boy\n", line);
    std::fflush(stdout);
  }
}
