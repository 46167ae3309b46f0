// Attention computed a block of queries at a time, with the block size taken
// as a quarter of the queries: with fewer than four queries the block is zero
// rows and the loop never advances. Correct on the larger cases, it hangs on
// the first one with a single query.
#include "sdpa.h"

#include <cmath>
#include <limits>
#include <vector>

std::tuple<torch::Tensor, torch::Tensor> scaled_dot_product_attention(
    const torch::Tensor& query, const torch::Tensor& key, const torch::Tensor& value,
    const torch::Tensor& mask) {
  const int64_t queries = query.size(-2);
  const int64_t block = queries / 4;  // 0 when there are fewer than 4 queries
  const double scale = 1.0 / std::sqrt(static_cast<double>(query.size(-1)));
  std::vector<torch::Tensor> outputs, all_weights;
  for (int64_t start = 0; start < queries; start += block) {
    const int64_t rows = std::min(block, queries - start);
    auto q = query.narrow(-2, start, rows);
    auto scores = torch::matmul(q, key.transpose(-2, -1)) * scale;
    if (mask.defined()) {
      auto m = mask.size(-2) == 1 ? mask : mask.narrow(-2, start, rows);
      scores = scores.masked_fill(m == 0, -std::numeric_limits<double>::infinity());
    }
    auto weights = torch::softmax(scores, -1);
    outputs.push_back(torch::matmul(weights, value));
    all_weights.push_back(weights);
  }
  return {torch::cat(outputs, -2), torch::cat(all_weights, -2)};
}
