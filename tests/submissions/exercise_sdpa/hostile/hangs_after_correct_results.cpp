// Hostile: computes correct results, but registers (on its first call) an atexit
// handler that loops forever, so the process never exits after the results are sent.
// A process that does not end is a hang however good its results: verdict timeout.
#include "sdpa.h"

#include <cmath>
#include <cstdlib>
#include <limits>

namespace {
void spin_forever() {
  volatile unsigned long spin = 0;
  while (true) ++spin;
}
}  // namespace

std::tuple<torch::Tensor, torch::Tensor> scaled_dot_product_attention(
    const torch::Tensor& query, const torch::Tensor& key, const torch::Tensor& value, const torch::Tensor& mask) {
  static const int registered = std::atexit(spin_forever);
  (void)registered;
  auto scores = torch::matmul(query, key.transpose(-2, -1)) / std::sqrt(static_cast<double>(query.size(-1)));
  if (mask.defined()) scores = scores.masked_fill(mask == 0, -std::numeric_limits<double>::infinity());
  auto weights = torch::softmax(scores, -1);
  return {torch::matmul(weights, value), weights};
}
