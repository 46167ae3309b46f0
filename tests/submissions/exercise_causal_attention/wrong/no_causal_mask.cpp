// Wrong: plain attention: every token also attends to the tokens after it.
#include "causal_attention.h"

#include <cmath>

std::tuple<torch::Tensor, torch::Tensor> causal_self_attention(const torch::Tensor& query, const torch::Tensor& key,
                                                               const torch::Tensor& value) {
  auto scores = torch::matmul(query, key.transpose(-2, -1)) / std::sqrt(static_cast<double>(query.size(-1)));
  auto weights = torch::softmax(scores, -1);
  return {torch::matmul(weights, value), weights};
}
