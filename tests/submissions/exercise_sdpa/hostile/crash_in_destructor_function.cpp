// Hostile: computes correct results, then crashes in a function marked
// __attribute__((destructor)), which the loader runs when the process ends
// (after every case, once the results are sent). A crash at exit is a crash.
#include "sdpa.h"

#include <cmath>
#include <csignal>
#include <limits>

__attribute__((destructor)) static void crash_when_unloaded() { std::raise(SIGSEGV); }

std::tuple<torch::Tensor, torch::Tensor> scaled_dot_product_attention(
    const torch::Tensor& query, const torch::Tensor& key, const torch::Tensor& value, const torch::Tensor& mask) {
  auto scores = torch::matmul(query, key.transpose(-2, -1)) / std::sqrt(static_cast<double>(query.size(-1)));
  if (mask.defined()) scores = scores.masked_fill(mask == 0, -std::numeric_limits<double>::infinity());
  auto weights = torch::softmax(scores, -1);
  return {torch::matmul(weights, value), weights};
}
