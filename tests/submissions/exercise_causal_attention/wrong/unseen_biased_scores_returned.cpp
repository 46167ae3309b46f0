// Wrong (not in the mistake list as written): the future is hidden by adding
// a bias of -inf above the diagonal, the output is right, but the function
// returns the biased scores it fed to the softmax as "the attention weights".
#include "causal_attention.h"

#include <cmath>
#include <limits>

std::tuple<torch::Tensor, torch::Tensor> causal_self_attention(const torch::Tensor& query, const torch::Tensor& key,
                                                               const torch::Tensor& value) {
  const auto n = query.size(-2);
  const auto d_k = query.size(-1);
  auto bias = torch::full({n, n}, -std::numeric_limits<double>::infinity(), query.options()).triu(1);
  auto logits = torch::matmul(query, key.transpose(-2, -1)) * (1.0 / std::sqrt(static_cast<double>(d_k))) + bias;
  auto probabilities = torch::softmax(logits, /*dim=*/-1);
  auto output = torch::matmul(probabilities, value);
  return std::make_tuple(output, logits);
}
