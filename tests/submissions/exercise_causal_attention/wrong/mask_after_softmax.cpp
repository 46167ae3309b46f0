// Wrong: future weights are zeroed after the softmax, and the rows are not
// renormalised: they no longer sum to 1.
#include "causal_attention.h"

#include <cmath>

std::tuple<torch::Tensor, torch::Tensor> causal_self_attention(const torch::Tensor& query, const torch::Tensor& key,
                                                               const torch::Tensor& value) {
  const auto n = query.size(-2);
  auto scores = torch::matmul(query, key.transpose(-2, -1)) / std::sqrt(static_cast<double>(query.size(-1)));
  auto weights = torch::softmax(scores, -1) * torch::ones({n, n}, query.options()).tril();
  return {torch::matmul(weights, value), weights};
}
