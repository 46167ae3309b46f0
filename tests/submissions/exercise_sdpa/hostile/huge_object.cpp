// Hostile: a 300 MB initialised array, so that the compiler writes a 300 MB
// object (and the linker a 300 MB shared object): many of them in a batch
// would fill the disk. Each file a compile step writes is capped at 128 MB.
#include "sdpa.h"

#include <cmath>
#include <limits>

static volatile char ballast[300 << 20] = {1};

std::tuple<torch::Tensor, torch::Tensor> scaled_dot_product_attention(
    const torch::Tensor& query, const torch::Tensor& key, const torch::Tensor& value, const torch::Tensor& mask) {
  (void)ballast[0];
  auto scores = torch::matmul(query, key.transpose(-2, -1)) / std::sqrt(static_cast<double>(query.size(-1)));
  if (mask.defined()) scores = scores.masked_fill(mask == 0, -std::numeric_limits<double>::infinity());
  auto weights = torch::softmax(scores, -1);
  return {torch::matmul(weights, value), weights};
}
