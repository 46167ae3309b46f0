// Wrong: tril(1) as the "may attend" matrix: each token also sees the next one.
#include "causal_attention.h"

#include <cmath>
#include <limits>

std::tuple<torch::Tensor, torch::Tensor> causal_self_attention(const torch::Tensor& query, const torch::Tensor& key,
                                                               const torch::Tensor& value) {
  const auto n = query.size(-2);
  auto scores = torch::matmul(query, key.transpose(-2, -1)) / std::sqrt(static_cast<double>(query.size(-1)));
  auto allowed = torch::ones({n, n}, query.options()).tril(1);
  scores = scores.masked_fill(allowed == 0, -std::numeric_limits<double>::infinity());
  auto weights = torch::softmax(scores, -1);
  return {torch::matmul(weights, value), weights};
}
