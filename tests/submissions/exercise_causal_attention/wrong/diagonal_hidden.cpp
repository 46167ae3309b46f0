// Wrong: triu(0) hides the diagonal too: a token cannot see itself, and the
// first token has nothing left to attend to (its row is NaN).
#include "causal_attention.h"

#include <cmath>
#include <limits>

std::tuple<torch::Tensor, torch::Tensor> causal_self_attention(const torch::Tensor& query, const torch::Tensor& key,
                                                               const torch::Tensor& value) {
  const auto n = query.size(-2);
  auto scores = torch::matmul(query, key.transpose(-2, -1)) / std::sqrt(static_cast<double>(query.size(-1)));
  auto future = torch::ones({n, n}, query.options().dtype(torch::kBool)).triu();
  scores = scores.masked_fill(future, -std::numeric_limits<double>::infinity());
  auto weights = torch::softmax(scores, -1);
  return {torch::matmul(weights, value), weights};
}
