// Accepted: the "future" set as triu(diagonal = 1), so the diagonal stays visible.
#include "causal_attention.h"

#include <cmath>
#include <limits>

std::tuple<torch::Tensor, torch::Tensor> causal_self_attention(const torch::Tensor& query, const torch::Tensor& key,
                                                               const torch::Tensor& value) {
  const int64_t n = query.size(2);
  const double d_k = static_cast<double>(query.size(3));
  auto future = torch::ones({n, n}, torch::TensorOptions().dtype(torch::kBool).device(query.device())).triu(1);
  auto scores = torch::matmul(query / std::sqrt(d_k), key.transpose(2, 3));
  scores.masked_fill_(future, -std::numeric_limits<float>::infinity());
  auto attention = scores.softmax(-1);
  return std::make_tuple(attention.matmul(value), attention);
}
