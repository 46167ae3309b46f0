// Hostile: includes the pipe a compiler started ahead of the save reads its
// source from (grade watch compiles the file through /dev/fd/3). It must be
// refused as any special file is, whether the compiler was started ahead or
// not; with `#pragma once` an accepted include would be harmless but would
// compile in one mode and not in the other.
#pragma once
#include "sdpa.h"
#include "/dev/fd/3"
#include "/proc/self/fd/3"

#include <cmath>
#include <limits>

std::tuple<torch::Tensor, torch::Tensor> scaled_dot_product_attention(
    const torch::Tensor& query, const torch::Tensor& key, const torch::Tensor& value, const torch::Tensor& mask) {
  auto scores = torch::matmul(query, key.transpose(-2, -1)) / std::sqrt(static_cast<double>(query.size(-1)));
  if (mask.defined()) scores = scores.masked_fill(mask == 0, -std::numeric_limits<double>::infinity());
  auto weights = torch::softmax(scores, -1);
  return {torch::matmul(weights, value), weights};
}
