// Wrong: an additive bias made with full_like(-1e30) above the diagonal: fine in
// float64, float32 and bfloat16, but -1e30 does not fit float16, where
// full_like refuses it.
#include "causal_attention.h"

#include <cmath>

std::tuple<torch::Tensor, torch::Tensor> causal_self_attention(const torch::Tensor& query, const torch::Tensor& key,
                                                               const torch::Tensor& value) {
  const auto n = query.size(-2);
  auto scores = torch::matmul(query, key.transpose(-2, -1)) / std::sqrt(static_cast<double>(query.size(-1)));
  auto keep = torch::ones({n, n}, query.options().dtype(torch::kBool)).tril();
  auto bias = torch::where(keep, torch::zeros_like(scores), torch::full_like(scores, -1e30));
  auto weights = torch::softmax(scores + bias, -1);
  return {torch::matmul(weights, value), weights};
}
