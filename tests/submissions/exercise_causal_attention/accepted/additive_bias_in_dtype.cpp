// Accepted: an additive bias (0 on and below the diagonal, -inf above) built
// with the scores' own options, so it never changes their dtype.
#include "causal_attention.h"

#include <cmath>
#include <limits>

std::tuple<torch::Tensor, torch::Tensor> causal_self_attention(const torch::Tensor& query, const torch::Tensor& key,
                                                               const torch::Tensor& value) {
  auto scores = torch::einsum("bhqd,bhkd->bhqk", {query, key}) * (1.0 / std::sqrt(static_cast<double>(key.size(-1))));
  const auto n = scores.size(-1);
  auto bias = torch::full({n, n}, -std::numeric_limits<double>::infinity(), scores.options()).triu(1);
  auto weights = torch::softmax(scores + bias, /*dim=*/-1);
  return {torch::einsum("bhqk,bhkd->bhqd", {weights, value}), weights};
}
