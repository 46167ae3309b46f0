// The classic GPU bug: the causal mask is built with torch::ones and no
// device, so it lives on the CPU whatever the inputs' device. Right numbers on
// a laptop; a device-mismatch error in masked_fill on a GPU.
#include "causal_attention.h"

#include <cmath>
#include <limits>

std::tuple<torch::Tensor, torch::Tensor> causal_self_attention(const torch::Tensor& query, const torch::Tensor& key,
                                                               const torch::Tensor& value) {
  const int64_t n = query.size(-2);
  auto scores = torch::matmul(query, key.transpose(-2, -1)) / std::sqrt(static_cast<double>(query.size(-1)));
  auto mask = torch::ones({n, n}).tril();
  scores = scores.masked_fill(mask == 0, -std::numeric_limits<double>::infinity());
  auto weights = torch::softmax(scores, -1);
  return {torch::matmul(weights, value), weights};
}
