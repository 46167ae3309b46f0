// Wrong (not in the mistake list): the output's heads are merged into
// (B, N, H * d_v), as a multi-head module would do after attention; this
// function must return (B, H, N, d_v).
#include "causal_attention.h"

#include <cmath>
#include <limits>

std::tuple<torch::Tensor, torch::Tensor> causal_self_attention(const torch::Tensor& query, const torch::Tensor& key,
                                                               const torch::Tensor& value) {
  const auto b = query.size(0), h = query.size(1), n = query.size(2);
  auto scores = torch::matmul(query, key.transpose(-2, -1)) / std::sqrt(static_cast<double>(query.size(-1)));
  auto future = torch::ones({n, n}, query.options().dtype(torch::kBool)).triu(1);
  auto weights = torch::softmax(scores.masked_fill(future, -std::numeric_limits<double>::infinity()), -1);
  auto output = torch::matmul(weights, value).transpose(1, 2).reshape({b, n, h * value.size(-1)});
  return {output, weights};
}
