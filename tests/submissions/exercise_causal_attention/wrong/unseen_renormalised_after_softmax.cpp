// Wrong (not in the mistake list): softmax over every key, then the future
// weights zeroed and each row renormalised. Equal on paper, but the future
// scores still enter the softmax's normaliser: changing a later token moves
// earlier outputs (by rounding, or to NaN when a future score is huge), and
// gradients reach later tokens.
#include "causal_attention.h"

#include <cmath>

std::tuple<torch::Tensor, torch::Tensor> causal_self_attention(const torch::Tensor& query, const torch::Tensor& key,
                                                               const torch::Tensor& value) {
  const auto n = query.size(-2);
  auto scores = torch::matmul(query, key.transpose(-2, -1)) / std::sqrt(static_cast<double>(query.size(-1)));
  auto weights = torch::softmax(scores, -1) * torch::ones({n, n}, query.options()).tril();
  weights = weights / weights.sum(-1, /*keepdim=*/true);
  return {torch::matmul(weights, value), weights};
}
