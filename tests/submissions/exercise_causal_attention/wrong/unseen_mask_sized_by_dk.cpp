// Wrong (not in the mistake list): the mask is sized by the feature size
// (query.size(-1)) instead of the sequence length (query.size(-2)).
#include "causal_attention.h"

#include <cmath>
#include <limits>

std::tuple<torch::Tensor, torch::Tensor> causal_self_attention(const torch::Tensor& query, const torch::Tensor& key,
                                                               const torch::Tensor& value) {
  const auto d_k = query.size(-1);
  auto scores = torch::matmul(query, key.transpose(-2, -1)) / std::sqrt(static_cast<double>(d_k));
  auto future = torch::ones({d_k, d_k}, query.options().dtype(torch::kBool)).triu(1);
  auto weights = torch::softmax(scores.masked_fill(future, -std::numeric_limits<double>::infinity()), -1);
  return {torch::matmul(weights, value), weights};
}
