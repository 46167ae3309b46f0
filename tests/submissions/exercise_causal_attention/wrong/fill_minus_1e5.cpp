// Wrong: the future keys get -100000 ("large enough after the softmax"): right
// in float64, float32 and bfloat16, but float16 holds nothing beyond 65504, so
// masked_fill refuses the value for float16 inputs.
#include "causal_attention.h"

#include <cmath>

std::tuple<torch::Tensor, torch::Tensor> causal_self_attention(const torch::Tensor& query, const torch::Tensor& key,
                                                               const torch::Tensor& value) {
  const auto n = query.size(-2);
  auto scores = torch::matmul(query, key.transpose(-2, -1)) / std::sqrt(static_cast<double>(query.size(-1)));
  auto future = torch::triu(torch::ones({n, n}, query.options().dtype(torch::kBool)), 1);
  auto weights = torch::softmax(scores.masked_fill(future, -1e5), -1);
  return {torch::matmul(weights, value), weights};
}
